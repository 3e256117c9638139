package bench

import (
	"strconv"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/lang/cjk"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"
)

// Bleve is bleve v2 with its scorch index kept in memory (empty path).
//
// The default configuration is bleve.NewIndexMapping() as is: dynamic
// fields, the "standard" analyzer (unicode tokenizer, lower case, English
// stop words; no stemming), TF-IDF scoring, and a match query over the
// composite _all field.
//
// The tuned configuration indexes only the question and answer fields, both
// with one custom analyzer combining bleve's "en" analyzer (possessive,
// lower case, English stop words, Porter stemming) with its "cjk" filters
// (full-width folding, CJK bigrams), so English and Chinese text in the same
// field are each analysed appropriately; it scores with BM25 and queries
// question^2 OR answer^1. Term vectors and stored fields are off.
type Bleve struct {
	tuned bool
	idx   bleve.Index
}

const bleveTunedAnalyzer = "en_cjk"

// NewBleve returns an empty in-memory bleve index, tuned or default.
func NewBleve(tuned bool) (*Bleve, error) {
	var m mapping.IndexMapping
	if tuned {
		im := bleve.NewIndexMapping()
		if err := im.AddCustomAnalyzer(bleveTunedAnalyzer, map[string]any{
			"type":      custom.Name,
			"tokenizer": unicode.Name,
			"token_filters": []any{
				cjk.WidthName,
				en.PossessiveName,
				lowercase.Name,
				en.StopName,
				porter.Name,
				cjk.BigramName,
			},
		}); err != nil {
			return nil, err
		}
		im.ScoringModel = index.BM25Scoring
		im.DefaultAnalyzer = bleveTunedAnalyzer
		doc := bleve.NewDocumentStaticMapping()
		for _, f := range []string{"question", "answer"} {
			fm := bleve.NewTextFieldMapping()
			fm.Analyzer = bleveTunedAnalyzer
			fm.Store = false
			fm.IncludeInAll = false
			fm.IncludeTermVectors = false
			doc.AddFieldMappingsAt(f, fm)
		}
		im.DefaultMapping = doc
		m = im
	} else {
		m = bleve.NewIndexMapping()
	}
	idx, err := bleve.NewUsing("", m, scorch.Name, scorch.Name, nil)
	if err != nil {
		return nil, err
	}
	return &Bleve{tuned: tuned, idx: idx}, nil
}

func (b *Bleve) Name() string {
	if b.tuned {
		return "bleve-tuned"
	}
	return "bleve-default"
}

type bleveDoc struct {
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

func (b *Bleve) Build(docs []Record) error {
	const batchSize = 1000
	batch := b.idx.NewBatch()
	for i, d := range docs {
		if err := batch.Index(strconv.Itoa(i), bleveDoc{Question: d.Question, Answer: d.Answer}); err != nil {
			return err
		}
		if batch.Size() >= batchSize {
			if err := b.idx.Batch(batch); err != nil {
				return err
			}
			batch = b.idx.NewBatch()
		}
	}
	if batch.Size() > 0 {
		return b.idx.Batch(batch)
	}
	return nil
}

func (b *Bleve) Search(text string, k int) ([]int, error) {
	var q query.Query
	if b.tuned {
		qq := bleve.NewMatchQuery(text)
		qq.SetField("question")
		qq.SetBoost(2)
		qa := bleve.NewMatchQuery(text)
		qa.SetField("answer")
		q = bleve.NewDisjunctionQuery(qq, qa)
	} else {
		q = bleve.NewMatchQuery(text)
	}
	req := bleve.NewSearchRequestOptions(q, k, 0, false)
	res, err := b.idx.Search(req)
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(res.Hits))
	for _, h := range res.Hits {
		i, err := strconv.Atoi(h.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, i)
	}
	return out, nil
}

func (b *Bleve) DiskBytes() int64 { return 0 }
func (b *Bleve) Close() error     { return b.idx.Close() }
