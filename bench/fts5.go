package bench

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	_ "modernc.org/sqlite" // pure-Go SQLite driver "sqlite", FTS5 compiled in
)

// FTS5 is SQLite FTS5 through the pure-Go modernc.org/sqlite driver, in a
// database file in a temporary directory (an in-memory database is private
// to one connection of database/sql's pool, so concurrent queries need a
// file; the OS page cache keeps it in memory).
//
// One table holds both fields with the "porter unicode61" tokenizer
// (Unicode word splitting, case and diacritic folding, Porter stemming for
// English). unicode61 would keep a run of Chinese characters as one token,
// so Chinese is split into single characters before indexing, and queries
// search Chinese as two-character phrases ("内 存"), which gives the bigram
// matching that suits Chinese words (mostly two characters) without a
// custom tokenizer; the trigram tokenizer was not used because Chinese
// words are shorter than three characters. Query words are OR-ed (FTS5's
// default is AND, which loses paraphrases) and ranked by
// bm25(qa, 2.0, 1.0): the question weighs twice the answer. FTS5 has no
// stop-word support; the "sqlite-fts5-stop" variant drops English stop words
// (the Snowball list, as bleve's "stop_en") from queries, which is much
// faster on common words but ranks differently.
type FTS5 struct {
	stop bool
	dir  string
	db   *sql.DB
	stmt *sql.Stmt
}

// NewFTS5 creates an empty FTS5 database in a new temporary directory;
// with stop, queries drop English stop words.
func NewFTS5(stop bool) (*FTS5, error) {
	dir, err := os.MkdirTemp("", "memex-bench-fts5-")
	if err != nil {
		return nil, err
	}
	dsn := "file:" + filepath.Join(dir, "qa.db") + "?_pragma=journal_mode(OFF)&_pragma=synchronous(OFF)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	if _, err := db.Exec(`CREATE VIRTUAL TABLE qa USING fts5(question, answer, tokenize = 'porter unicode61 remove_diacritics 2')`); err != nil {
		db.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	return &FTS5{stop: stop, dir: dir, db: db}, nil
}

func (f *FTS5) Name() string {
	if f.stop {
		return "sqlite-fts5-stop"
	}
	return "sqlite-fts5"
}

func (f *FTS5) Build(docs []Record) error {
	tx, err := f.db.Begin()
	if err != nil {
		return err
	}
	ins, err := tx.Prepare(`INSERT INTO qa(rowid, question, answer) VALUES (?, ?, ?)`)
	if err != nil {
		tx.Rollback()
		return err
	}
	for i, d := range docs {
		if _, err := ins.Exec(i+1, splitCJK(d.Question), splitCJK(d.Answer)); err != nil {
			tx.Rollback()
			return err
		}
	}
	ins.Close()
	if err := tx.Commit(); err != nil {
		return err
	}
	// Merge the index b-trees, as one would after a bulk load.
	if _, err := f.db.Exec(`INSERT INTO qa(qa) VALUES ('optimize')`); err != nil {
		return err
	}
	f.stmt, err = f.db.Prepare(`SELECT rowid FROM qa WHERE qa MATCH ? ORDER BY bm25(qa, 2.0, 1.0) LIMIT ?`)
	return err
}

func (f *FTS5) Search(query string, k int) ([]int, error) {
	if f.stmt == nil {
		return nil, errors.New("fts5: search before build")
	}
	m := FTS5Query(query, f.stop)
	if m == "" {
		return nil, nil
	}
	rows, err := f.stmt.Query(m, k)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id-1)
	}
	return out, rows.Err()
}

func (f *FTS5) DiskBytes() int64 {
	var n int64
	ents, _ := os.ReadDir(f.dir)
	for _, e := range ents {
		if fi, err := e.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}

func (f *FTS5) Close() error {
	if f.stmt != nil {
		f.stmt.Close()
	}
	err := f.db.Close()
	os.RemoveAll(f.dir)
	return err
}

func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// splitCJK puts a space between Chinese, Japanese and Korean characters so
// that unicode61 makes each one a token.
func splitCJK(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/2)
	prevCJK := false
	for _, r := range s {
		c := isCJK(r)
		if c || prevCJK {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
		prevCJK = c
	}
	return b.String()
}

// FTS5Query turns free text into an FTS5 MATCH expression: every word
// (letters and digits) quoted, every run of CJK characters as its
// two-character phrases (a lone character as itself), all OR-ed, without
// duplicates. With stop, English stop words are left out unless every word
// is one. It returns "" when the text has no word.
func FTS5Query(text string, stop bool) string {
	var terms, stops []string
	seen := map[string]bool{}
	add := func(t string) {
		if !seen[t] {
			seen[t] = true
			if stop && englishStop[t] {
				stops = append(stops, `"`+t+`"`)
			} else {
				terms = append(terms, `"`+t+`"`)
			}
		}
	}
	rs := []rune(text)
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case isCJK(r):
			j := i
			for j < len(rs) && isCJK(rs[j]) {
				j++
			}
			if j-i == 1 {
				add(string(r))
			}
			for p := i; p+1 < j; p++ {
				add(string(rs[p]) + " " + string(rs[p+1]))
			}
			i = j
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			j := i
			for j < len(rs) && (unicode.IsLetter(rs[j]) || unicode.IsDigit(rs[j])) && !isCJK(rs[j]) {
				j++
			}
			add(strings.ToLower(string(rs[i:j])))
			i = j
		default:
			i++
		}
	}
	if len(terms) == 0 {
		terms = stops
	}
	return strings.Join(terms, " OR ")
}

// englishStop is the Snowball English stop-word list, plus the pieces
// unicode61 splits contractions into ("don't" → "don", "t").
var englishStop = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`i me my myself we our ours ourselves you your yours yourself
	yourselves he him his himself she her hers herself it its itself they them their theirs
	themselves what which who whom this that these those am is are was were be been being have
	has had having do does did doing would should could ought a an the and but if or because as
	until while of at by for with about against between into through during before after above
	below to from up down in out on off over under again further then once here there when where
	why how all any both each few more most other some such no nor not only own same so than too
	very s t d ll m re ve don doesn didn isn aren wasn weren hasn haven hadn won wouldn shan
	shouldn couldn mustn let`) {
		m[w] = true
	}
	return m
}()

// SQLiteVersion is the version of the SQLite library the driver embeds.
func SQLiteVersion() (string, error) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return "", err
	}
	defer db.Close()
	var v string
	err = db.QueryRow(`SELECT sqlite_version()`).Scan(&v)
	return v, err
}
