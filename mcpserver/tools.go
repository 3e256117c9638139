package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/engine"
)

// SearchInput is memex_search's input.
type SearchInput struct {
	Query    string  `json:"query" jsonschema:"what to look for: the task or question, in plain words"`
	Limit    int     `json:"limit,omitempty" jsonschema:"most matches to return (1-50, default 10)"`
	MinScore float64 `json:"min_score,omitempty" jsonschema:"lowest relevance to return, 0-1 (default 0.2)"`
}

// Match is one QA found by memex_search.
type Match struct {
	QAID            string      `json:"qa_id" jsonschema:"the QA's id; cite it as [QA_REF <qa_id>]"`
	Question        string      `json:"question"`
	Answer          string      `json:"answer"`
	Relevance       float64     `json:"relevance" jsonschema:"how well it matches the query, 0-1"`
	Trust           float64     `json:"trust" jsonschema:"trust learned from outcomes, 0-1"`
	ValidationLevel int         `json:"validation_level" jsonschema:"0 unvalidated … 3 verified"`
	Status          core.Status `json:"status"`
	ReceiptID       string      `json:"receipt_id,omitempty" jsonschema:"quote it in memex_validate"`
}

// SearchOutput is memex_search's result.
type SearchOutput struct {
	Matches []Match `json:"matches"`
}

// BlockInput is memex_memory_block's input.
type BlockInput struct {
	Query string `json:"query" jsonschema:"the task you are about to work on"`
}

// BlockItem is one QA the gatekeeper put in the block.
type BlockItem struct {
	QAID      string `json:"qa_id"`
	Probation bool   `json:"probation" jsonschema:"true for a new, unverified QA shown to learn whether it works"`
	ReceiptID string `json:"receipt_id,omitempty" jsonschema:"quote it in memex_validate"`
}

// BlockOutput is memex_memory_block's result.
type BlockOutput struct {
	Block   string      `json:"block" jsonschema:"the memory block to read before working (empty when nothing is trusted and relevant)"`
	Items   []BlockItem `json:"items"`
	RunID   string      `json:"run_id"`
	Skipped string      `json:"skipped,omitempty" jsonschema:"why memory was not searched (l0_task: a trivial task)"`
}

// CandidateInput is memex_record_candidate's input.
type CandidateInput struct {
	Question string   `json:"question" jsonschema:"the question or task the answer solves"`
	Answer   string   `json:"answer" jsonschema:"the answer that worked: what to do and the commands that proved it; no secrets"`
	Tags     []string `json:"tags,omitempty" jsonschema:"a few topic tags (language, tool)"`
}

// CandidateOutput is memex_record_candidate's result.
type CandidateOutput struct {
	QAID             string      `json:"qa_id"`
	Status           core.Status `json:"status"`
	DeduplicatedInto string      `json:"deduplicated_into,omitempty" jsonschema:"set when an existing QA says the same; the report counted for it"`
	Redacted         int         `json:"redacted" jsonschema:"how many secrets were removed before storing"`
}

// ValidateInput is memex_validate's input.
type ValidateInput struct {
	QAID      string `json:"qa_id" jsonschema:"the QA you relied on"`
	Result    string `json:"result" jsonschema:"pass: it worked (your tests or build passed); fail: it did not"`
	ReceiptID string `json:"receipt_id,omitempty" jsonschema:"the receipt_id memex_search or memex_memory_block gave for this QA"`
	Strength  string `json:"strength,omitempty" jsonschema:"weak (default): your judgement; medium: tests or a build you ran confirm it"`
}

// ValidateOutput is memex_validate's result.
type ValidateOutput struct {
	QAID            string      `json:"qa_id"`
	Trust           float64     `json:"trust"`
	ValidationLevel int         `json:"validation_level"`
	Status          core.Status `json:"status"`
}

// StatsInput is memex_stats's input (none).
type StatsInput struct{}

func (s *Server) addQATools(srv *mcp.Server) {
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "memex_search",
		Title:       "Search the memory",
		Description: "Search memex's QA memory of this project for answers from earlier runs. Returns matches with relevance, trust and validation level; prefer memex_memory_block when you want only what the gatekeeper trusts.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, s.search)
	mcp.AddTool(srv, &mcp.Tool{
		Name:  "memex_memory_block",
		Title: "Get the memory block for a task",
		Description: "Ask memex's gatekeeper which QAs to trust for a task: returns the [MEMORY_CONTEXT v1] block (trusted items, plus at most one labelled unverified item on probation) with each item's receipt. " +
			"Read it before working; cite an item you use as [QA_REF <qa_id>] and report it afterwards with memex_validate.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, s.block)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "memex_record_candidate",
		Title:       "Record a candidate QA",
		Description: "Store a question → answer that solved a task in this project, as a candidate: it starts untrusted and earns trust when later runs that use it pass. Record only answers your tests or build confirmed. Secrets are removed before storing.",
	}, s.candidate)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "memex_validate",
		Title:       "Report whether a QA worked",
		Description: "Report the outcome of relying on a QA (pass or fail), quoting the receipt_id memex gave with it. Trust moves with these reports; report failures too.",
	}, s.validate)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        "memex_stats",
		Title:       "Trust statistics",
		Description: "The project's QAs by status and validation level, the trust histogram, how often QAs were shown and used, and the top QAs.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, s.stats)
}

func (s *Server) search(ctx context.Context, _ *mcp.CallToolRequest, in SearchInput) (*mcp.CallToolResult, SearchOutput, error) {
	if strings.TrimSpace(in.Query) == "" {
		return nil, SearchOutput{}, errors.New("query is empty")
	}
	if in.Limit < 0 || in.Limit > 50 || in.MinScore < 0 || in.MinScore > 1 {
		return nil, SearchOutput{}, errors.New("limit must be 1-50 and min_score 0-1")
	}
	req := core.SearchRequest{ProjectID: s.cfg.ProjectID, Query: in.Query, Limit: in.Limit, MinScore: in.MinScore}
	if req.Limit == 0 {
		req.Limit = core.DefaultSearchLimit
	}
	if req.MinScore == 0 {
		req.MinScore = core.DefaultMinScore
	}
	ms, err := s.store.Search(ctx, req)
	if err != nil {
		return nil, SearchOutput{}, fmt.Errorf("search: %w", err)
	}
	out := SearchOutput{Matches: []Match{}}
	for _, m := range ms {
		out.Matches = append(out.Matches, Match{QAID: m.QAID, Question: m.Question, Answer: m.Answer, Relevance: m.Relevance,
			Trust: m.Trust, ValidationLevel: m.ValidationLevel, Status: m.Status, ReceiptID: m.ReceiptID})
	}
	return nil, out, nil
}

func (s *Server) block(ctx context.Context, _ *mcp.CallToolRequest, in BlockInput) (*mcp.CallToolResult, BlockOutput, error) {
	if strings.TrimSpace(in.Query) == "" {
		return nil, BlockOutput{}, errors.New("query is empty")
	}
	query, _ := s.red.Redact(in.Query)
	pre, err := s.eng.Pre(ctx, engine.Task{ProjectID: s.cfg.ProjectID, Query: query})
	if err != nil {
		return nil, BlockOutput{}, err
	}
	if pre.MemoryErr != nil {
		return nil, BlockOutput{}, pre.MemoryErr
	}
	out := BlockOutput{Block: pre.Block.Text, Items: []BlockItem{}, RunID: pre.RunID, Skipped: pre.Skipped}
	receipts := map[string]string{}
	for _, m := range pre.Matches {
		receipts[m.QAID] = m.ReceiptID
	}
	probation := map[string]bool{}
	for _, it := range pre.Decision.Items {
		probation[it.QAID] = it.Probation
	}
	for _, id := range pre.Shown {
		out.Items = append(out.Items, BlockItem{QAID: id, Probation: probation[id], ReceiptID: receipts[id]})
	}
	return nil, out, nil
}

func (s *Server) candidate(ctx context.Context, _ *mcp.CallToolRequest, in CandidateInput) (*mcp.CallToolResult, CandidateOutput, error) {
	q, f1 := s.red.Redact(strings.TrimSpace(in.Question))
	a, f2 := s.red.Redact(strings.TrimSpace(in.Answer))
	if q == "" || a == "" {
		return nil, CandidateOutput{}, errors.New("question and answer are required")
	}
	var tags []string
	for _, t := range in.Tags {
		if t, _ := s.red.Redact(strings.TrimSpace(t)); t != "" {
			tags = append(tags, t)
		}
	}
	req := core.BuildCandidateRequest(s.cfg.ProjectID, engine.NewID("mcp"), engine.NewID("ev"), q, a, tags, 0.5,
		map[string]any{"source": "mcp"}, nil)
	if err := req.Validate(); err != nil {
		return nil, CandidateOutput{}, err
	}
	res, err := s.store.RecordCandidate(ctx, req)
	if err != nil {
		return nil, CandidateOutput{}, fmt.Errorf("record candidate: %w", err)
	}
	return nil, CandidateOutput{QAID: res.QAID, Status: res.Status, DeduplicatedInto: res.DeduplicatedInto, Redacted: len(f1) + len(f2)}, nil
}

func (s *Server) validate(ctx context.Context, _ *mcp.CallToolRequest, in ValidateInput) (*mcp.CallToolResult, ValidateOutput, error) {
	var res core.Result
	switch in.Result {
	case "pass":
		res = core.ResultPass
	case "fail":
		res = core.ResultFail
	default:
		return nil, ValidateOutput{}, fmt.Errorf("result must be pass or fail, not %q", in.Result)
	}
	st := core.StrengthWeak
	switch in.Strength {
	case "", "weak":
	case "medium":
		st = core.StrengthMedium
	default:
		return nil, ValidateOutput{}, fmt.Errorf("strength must be weak or medium, not %q (strong evidence comes from memex run --verify)", in.Strength)
	}
	req := core.BuildValidateRequest(s.cfg.ProjectID, in.QAID, engine.NewID("mcp"), engine.NewID("ev"), res, st,
		core.RunContext{Reason: "mcp:" + string(st)}, s.now())
	req.ReceiptID = in.ReceiptID
	if err := req.Validate(); err != nil {
		return nil, ValidateOutput{}, err
	}
	rec, err := s.store.RecordValidation(ctx, req)
	if err != nil {
		return nil, ValidateOutput{}, fmt.Errorf("validate %s: %w", in.QAID, err)
	}
	return nil, ValidateOutput{QAID: rec.QAID, Trust: rec.TrustScore, ValidationLevel: rec.ValidationLevel, Status: rec.Status}, nil
}

func (s *Server) stats(ctx context.Context, _ *mcp.CallToolRequest, _ StatsInput) (*mcp.CallToolResult, core.ProjectStats, error) {
	st, ok := core.As[core.Statser](s.store)
	if !ok {
		return nil, core.ProjectStats{}, fmt.Errorf("the %s store has no statistics", s.store.Name())
	}
	out, err := st.Stats(ctx, s.cfg.ProjectID)
	if err != nil {
		return nil, core.ProjectStats{}, fmt.Errorf("stats: %w", err)
	}
	return nil, out, nil
}
