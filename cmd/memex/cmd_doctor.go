package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/memex-dev/memex/agent"
	"github.com/memex-dev/memex/core"
)

const doctorExamples = `  memex doctor
  memex doctor --store file:///tmp/memex.db`

func cmdDoctor(ctx context.Context, a *app, args []string) error {
	fs, g := a.newFlagSet("doctor", "doctor [flags]", doctorExamples)
	pos, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("doctor: unexpected argument %q", pos[0])
	}
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	defer w.Flush()
	problems := 0
	check := func(name string, ok bool, detail string) {
		mark := "ok"
		if !ok {
			mark = "FAIL"
			problems++
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", mark, name, detail)
	}
	s, err := a.setup(g)
	if err != nil {
		check("config", false, err.Error())
		w.Flush()
		return fmt.Errorf("doctor: %d problem(s)", problems)
	}
	files := "no config file (defaults)"
	if len(s.cfg.Files) > 0 {
		files = strings.Join(s.cfg.Files, ", ")
	}
	check("config", true, files)
	var env []string
	for _, k := range envKeys() {
		if a.getenv(k) != "" {
			env = append(env, k)
		}
	}
	if len(env) > 0 {
		check("environment", true, strings.Join(env, ", ")+" set")
	}
	check("project", true, fmt.Sprintf("%s (from %s)", s.project, s.projectFrom))
	if err := a.openStore(ctx, s); err != nil {
		check("store", false, err.Error())
	} else {
		defer func() { _ = s.close() }()
		detail := fmt.Sprintf("%s (%s)", redactURL(s.storeURL), s.store.Name())
		if p, ok := core.As[core.Pinger](s.store); ok {
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			start := time.Now()
			err := p.Ping(pctx)
			cancel()
			if err != nil {
				check("store", false, detail+": ping: "+err.Error())
			} else {
				check("store", true, fmt.Sprintf("%s, ping %s", detail, time.Since(start).Round(time.Microsecond)))
			}
		} else {
			check("store", true, detail)
		}
	}
	for _, name := range []string{"claude", "codex", "gemini"} {
		if p, err := exec.LookPath(name); err == nil {
			fmt.Fprintf(w, "ok\tbackend %s\t%s\n", name, p)
		} else {
			fmt.Fprintf(w, "-\tbackend %s\tnot installed\n", name)
		}
	}
	if b, err := agent.Resolve(s.cfg.Backend, s.cfg.Model, nil, nil); err != nil {
		check("default backend", false, err.Error())
	} else {
		check("default backend", true, s.cfg.Backend+" → "+b.Argv[0])
	}
	w.Flush()
	if problems > 0 {
		return fmt.Errorf("doctor: %d problem(s)", problems)
	}
	return nil
}
