// Command compare indexes the same corpora with memex's retrieval, bleve v2
// (default and tuned) and SQLite FTS5, and prints markdown tables of their
// ranking quality and speed:
//
//	cd bench && go run ./cmd/compare [-eval ../../shared/eval] [-n 100000] [-runs 3]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/memex-dev/memex/bench"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	evalDir := fs.String("eval", "../../shared/eval", "folder of evaluation sets (en-bank77, en-se-dup)")
	zhPath := fs.String("zh", "../retrieval/testdata/zh_paraphrase.jsonl", "Chinese paraphrase set (memex retrieval testdata)")
	n := fs.Int("n", 100000, "QAs in the synthetic speed corpus (0 to skip)")
	nq := fs.Int("nq", 1000, "distinct queries on the synthetic corpus")
	runs := fs.Int("runs", 1, "speed measurements per engine and set (medians are printed)")
	engines := fs.String("engines", "", "comma-separated engines to run (default all: memex,bleve-default,bleve-tuned,sqlite-fts5,sqlite-fts5-stop)")
	sets := fs.String("sets", "", "comma-separated sets to run (default all: en-bank77,en-se-dup,zh-paraphrase,synthetic)")
	losses := fs.Int("losses", 0, "also list up to this many queries per set where memex ranks worse than the best other engine")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *runs < 1 {
		return fmt.Errorf("-runs %d: want at least 1", *runs)
	}
	facts := bench.Factories()
	if *engines != "" {
		want := strings.Split(*engines, ",")
		facts = slices.DeleteFunc(facts, func(f bench.Factory) bool { return !slices.Contains(want, f.Name) })
		if len(facts) == 0 || facts[0].Name != "memex" {
			return fmt.Errorf("-engines %q: must include memex and known engines", *engines)
		}
	}
	wantSet := func(name string) bool {
		return *sets == "" || slices.Contains(strings.Split(*sets, ","), name)
	}

	var all []bench.SetResults
	var todo []*bench.Set
	for _, name := range []string{"en-bank77", "en-se-dup"} {
		if !wantSet(name) {
			continue
		}
		s, err := bench.LoadEvalSet(filepath.Join(*evalDir, name))
		if err != nil {
			return err
		}
		todo = append(todo, s)
	}
	if wantSet("zh-paraphrase") {
		s, err := bench.LoadMixedSet("zh-paraphrase", *zhPath)
		if err != nil {
			return err
		}
		todo = append(todo, s)
	}
	if *n > 0 && wantSet("synthetic") {
		todo = append(todo, bench.SyntheticSet(*n, *nq, 1))
	}

	header(stdout, *runs)
	opt := bench.DefaultOptions()
	for _, s := range todo {
		sr := bench.SetResults{Set: s}
		for _, q := range s.Queries {
			if len(q.Relevant) > 0 {
				sr.Scored = true
				break
			}
		}
		// Runs are interleaved (every engine once, then again) so that a
		// burst of load on a shared machine does not hit one engine's runs
		// only.
		first := make([]bench.Result, len(facts))
		speeds := make([][]bench.Speed, len(facts))
		for r := range *runs {
			for i, f := range facts {
				fmt.Fprintf(stderr, "%s %s: %s run %d/%d\n", time.Now().UTC().Format("15:04:05"), s.Name, f.Name, r+1, *runs)
				res, err := bench.Measure(f, s, opt)
				if err != nil {
					return err
				}
				if r == 0 {
					first[i] = res
				}
				speeds[i] = append(speeds[i], res.Speed)
			}
		}
		for i := range facts {
			first[i].Speed = bench.MedianSpeed(speeds[i])
			sr.Results = append(sr.Results, first[i])
		}
		if sr.Scored {
			bench.WriteQuality(stdout, sr)
		}
		bench.WriteSpeed(stdout, sr, *runs)
		bench.WriteLosses(stdout, sr, *losses)
		all = append(all, sr)
	}
	bench.WriteSummary(stdout, all)
	return nil
}

func header(w io.Writer, runs int) {
	fmt.Fprintf(w, "## memex retrieval vs bleve and SQLite FTS5\n\n")
	fmt.Fprintf(w, "Run %s on %s/%s, %d CPUs, %s", time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 3 {
			fmt.Fprintf(w, ", load average at start %s %s %s", f[0], f[1], f[2])
		}
	}
	fmt.Fprintln(w, ".")
	var mods []string
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			switch d.Path {
			case "github.com/blevesearch/bleve/v2", "modernc.org/sqlite":
				mods = append(mods, d.Path+" "+d.Version)
			}
		}
	}
	if v, err := bench.SQLiteVersion(); err == nil {
		mods = append(mods, "SQLite "+v)
	}
	if len(mods) > 0 {
		fmt.Fprintf(w, "Engines: %s. Every search asks for the top 10.\n", strings.Join(mods, ", "))
	}
	if runs > 1 {
		fmt.Fprintf(w, "Speed figures are medians of %d interleaved runs; quality is from the first run.\n", runs)
	}
}
