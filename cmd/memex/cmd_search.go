package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"text/tabwriter"

	"github.com/memex-dev/memex/core"
)

const searchExamples = `  memex search "data race in the cache"
  memex search --limit 20 --min-score 0 "migrations"
  memex search --json "retry policy" | jq '.[0].qa_id'
  memex search --explain --project acme-app "token refresh"`

func cmdSearch(ctx context.Context, a *app, args []string) error {
	fs, g := a.newFlagSet("search", `search [flags] "query"`, searchExamples)
	asJSON := fs.Bool("json", false, "print exactly the match array POST /v1/qa/search returns")
	limit := fs.Int("limit", core.DefaultSearchLimit, fmt.Sprintf("maximum matches (1-%d)", core.MaxSearchLimit))
	minScore := fs.Float64("min-score", -1, "minimum relevance 0-1 (default: [memory] min_score, 0.2)")
	explain := fs.Bool("explain", false, "include each match's score components")
	pos, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef(`search: no query: memex search "query"`)
	}
	if *limit < 1 || *limit > core.MaxSearchLimit {
		return usagef("search: --limit must be between 1 and %d", core.MaxSearchLimit)
	}
	s, err := a.open(ctx, g)
	if err != nil {
		return err
	}
	defer func() { _ = s.close() }()
	req := core.SearchRequest{ProjectID: s.project, Query: strings.Join(pos, " "), Limit: *limit, MinScore: s.cfg.Engine.MinScore, Explain: *explain}
	if *minScore >= 0 {
		req.MinScore = *minScore
	}
	if err := req.Validate(); err != nil {
		return usagef("search: %v", err)
	}
	store, err := withSemantic(s.store, s.storeURL, s.cfg.Semantic, slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	ms, err := store.Search(ctx, req)
	if err != nil {
		return fmt.Errorf("search: %w", err)
	}
	if ms == nil {
		ms = []core.Match{}
	}
	if *asJSON {
		return jsonOut(a.stdout, ms)
	}
	if len(ms) == 0 {
		fmt.Fprintf(a.stdout, "no matches in project %s\n", s.project)
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "QA_ID\tLEVEL\tTRUST\tSCORE\tRELEVANCE\tSTATUS\tQUESTION")
	for _, m := range ms {
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.3f\t%.3f\t%s\t%s\n", m.QAID, m.Level, m.Trust, m.Score, m.Relevance, m.Status, oneLine(m.Question, 60))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if *explain {
		for _, m := range ms {
			if m.Explain != nil {
				x := m.Explain
				fmt.Fprintf(a.stdout, "%s: relevance %.3f trust %.3f freshness %.3f level_boost %.2f terms [%s]\n",
					m.QAID, x.Relevance, x.Trust, x.Freshness, x.LevelBoost, strings.Join(x.Terms, " "))
			}
		}
	}
	return nil
}

// oneLine collapses whitespace and cuts s to n runes with "…".
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
