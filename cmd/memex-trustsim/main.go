// Command memex-trustsim runs the full trust simulation (SPEC §5.5, package
// trust/sim) for the memex model and the original linear rule side by side
// and prints the results as markdown tables (docs/TRUST.md quotes them).
//
//	go run ./cmd/memex-trustsim            # the full run, 5 seeds
//	go run ./cmd/memex-trustsim -seeds 1 -runs 5000
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/memex-dev/memex/trust/sim"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "memex-trustsim:", err)
		os.Exit(2)
	}
}

func run(args []string, out io.Writer) error {
	cfg := sim.DefaultConfig()
	fs := flag.NewFlagSet("memex-trustsim", flag.ContinueOnError)
	fs.SetOutput(out)
	seed := fs.Uint64("seed", cfg.Seed, "first seed")
	seeds := fs.Int("seeds", 5, "number of seeds (worlds) to sum over")
	runs := fs.Int("runs", cfg.Runs, "agent runs per world")
	colluders := fs.String("colluders", "3,5,10,20", "comma-separated colluder counts for the adversary table")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *seeds < 1 {
		return fmt.Errorf("-seeds must be at least 1, got %d", *seeds)
	}
	ks, err := parseInts(*colluders)
	if err != nil {
		return fmt.Errorf("-colluders: %w", err)
	}
	cfg.Seed, cfg.Runs = *seed, *runs
	if cfg.AdversaryStart >= cfg.Runs {
		cfg.AdversaryStart = cfg.Runs / 10
	}
	if err := cfg.Validate(); err != nil {
		return err
	}

	mx, orig, err := sim.CompareSeeds(cfg, *seeds)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "### memex vs the original linear rule\n\n%d worlds (seeds %d–%d) × %d runs; %d topics, %d agents, %d trusted CI sources (%.0f %% of runs), %d colluders from run %d, outcome noise %.0f %%.\n\n",
		*seeds, cfg.Seed, cfg.Seed+uint64(*seeds)-1, cfg.Runs, cfg.Topics, cfg.Agents, cfg.CI, 100*cfg.CIShare, cfg.Colluders, cfg.AdversaryStart, 100*cfg.Noise)
	fmt.Fprintln(out, sim.Markdown(sim.Table(mx, orig)))

	ss, err := sim.AdversaryScenarios(cfg, ks, *seeds)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "### The colluding adversary\n\nSame worlds; k colluders forge strong passes on a poisoned QA and strong fails on an established good one; with and without trusted CI anchors.\n\n")
	fmt.Fprint(out, sim.AdversaryMarkdown(ss))
	return nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not a non-negative count", f)
		}
		out = append(out, n)
	}
	return out, nil
}
