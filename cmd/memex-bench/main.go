// Command memex-bench measures memex: retrieval quality on the shared/eval
// sets and in-process search latency over a synthetic corpus. Each
// subcommand is a func(args []string) error in the commands map; add new
// measurements there.
//
//	memex-bench quality [-eval DIR] [tuning flags]
//	memex-bench latency [-n 100000] [-queries 2000]
//	memex-bench gen [-n 1000]        (process.go)
//	memex-bench process [flags]      (process.go)
//	memex-bench service [flags]      (service.go)
//	memex-bench hooks [flags]        (hooks.go)
//	memex-bench dashboard [flags]    (dashboard.go)
package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "memex-bench:", err)
		os.Exit(1)
	}
}

// command is one subcommand; args excludes its name.
type command func(args []string) error

func commands(out io.Writer) map[string]command {
	return map[string]command{
		"quality":   func(args []string) error { return runQuality(args, out) },
		"latency":   func(args []string) error { return runLatency(args, out) },
		"gen":       func(args []string) error { return runGen(args, out) },
		"process":   func(args []string) error { return runProcess(args, out) },
		"service":   func(args []string) error { return runService(args, out) },
		"hooks":     func(args []string) error { return runHooks(args, out) },
		"dashboard": func(args []string) error { return runDashboard(args, out) },
	}
}

func run(args []string, out io.Writer) error {
	cmds := commands(out)
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(args) == 0 {
		return fmt.Errorf("usage: memex-bench <%s> [flags]", strings.Join(names, "|"))
	}
	c, ok := cmds[args[0]]
	if !ok {
		return fmt.Errorf("unknown subcommand %q (have: %s)", args[0], strings.Join(names, ", "))
	}
	return c(args[1:])
}
