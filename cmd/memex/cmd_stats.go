package main

import (
	"context"
	"fmt"

	"github.com/memex-dev/memex/core"
)

const statsExamples = `  memex stats
  memex stats --project acme-app --json | jq .trust_histogram`

func cmdStats(ctx context.Context, a *app, args []string) error {
	fs, g := a.newFlagSet("stats", "stats [flags]", statsExamples)
	asJSON := fs.Bool("json", false, "print the admin stats object (GET /admin/v1/projects/{id}/stats)")
	pos, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("stats: unexpected argument %q", pos[0])
	}
	s, err := a.open(ctx, g)
	if err != nil {
		return err
	}
	defer func() { _ = s.close() }()
	st, err := capability[core.Statser](s, "summarise a project")
	if err != nil {
		return err
	}
	ps, err := st.Stats(ctx, s.project)
	if err != nil {
		return fmt.Errorf("stats: %w", err)
	}
	if *asJSON {
		return jsonOut(a.stdout, ps)
	}
	w := a.stdout
	fmt.Fprintf(w, "project %s: %d QAs\n", ps.ProjectID, ps.Total)
	fmt.Fprint(w, "status:")
	for _, k := range []core.Status{core.StatusCandidate, core.StatusActive, core.StatusVerified, core.StatusStale, core.StatusDeprecated, core.StatusFrozen} {
		fmt.Fprintf(w, " %s %d", k, ps.ByStatus[k])
	}
	fmt.Fprint(w, "\nlevel: ")
	for _, k := range []string{"L0", "L1", "L2", "L3"} {
		fmt.Fprintf(w, " %s %d", k, ps.ByLevel[k])
	}
	fmt.Fprintf(w, "\nshown %d, used %d (use rate %.0f%%), validations: %d pass, %d fail\n", ps.Shown, ps.Used, 100*ps.UseRate, ps.Passes, ps.Fails)
	fmt.Fprintf(w, "trust histogram (0.0-1.0 by 0.1): %v\n", ps.TrustHistogram)
	fmt.Fprintf(w, "stale %d, expiring soon %d\n", ps.Stale, ps.ExpiringSoon)
	if len(ps.Top) > 0 {
		fmt.Fprintln(w, "top:")
		for _, r := range ps.Top {
			fmt.Fprintf(w, "  %s  trust %.2f  %s  %s\n", r.QAID, r.TrustScore, r.Level, oneLine(r.Question, 60))
		}
	}
	if dt, err := readDistillTotals(a.getenv, s.project); err == nil && dt.Runs > 0 { // cmd_distill.go
		fmt.Fprintf(w, "distillation: %d runs (%d ok, %d failed), %d candidates, tokens %d in / %d out",
			dt.Runs, dt.OK, dt.Failed, dt.Candidates, dt.Usage.InputTokens, dt.Usage.OutputTokens)
		if dt.Usage.CostUSD > 0 {
			fmt.Fprintf(w, ", $%.4f", dt.Usage.CostUSD)
		}
		fmt.Fprintln(w)
	}
	return nil
}
