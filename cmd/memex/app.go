package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// Exit codes (one place: exitCode).
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitCanceled = 130
)

// usageError is a command-line mistake: exit code 2. named is true when
// msg already names the command ("memex run: …"), so it is printed as is.
type usageError struct {
	msg   string
	named bool
}

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitCodeError carries an exit code chosen by the command itself (memex
// run passes the backend's code through).
type exitCodeError struct{ code int }

func (e *exitCodeError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// exitCode maps a command's error to the process exit code.
func exitCode(err error) int {
	var ue *usageError
	var ce *exitCodeError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ce):
		return ce.code
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue):
		return exitUsage
	case errors.Is(err, context.Canceled):
		return exitCanceled
	default:
		return exitError
	}
}

// app is one invocation: its streams and environment. Commands never read
// os.Args, os.Stdin or os.Getenv directly, so tests drive them in process.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	getwd          func() (string, error)
	registry       *registry
	// self is the command line that starts memex again (memex run starts
	// the distiller with it); nil means os.Executable(). selfEnv is added
	// to the child's environment.
	self, selfEnv []string
}

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, a *app, args []string) error
}

func commands() []command {
	return []command{
		{"run", "run an agent with memory (pre → run → post)", cmdRun},
		{"search", "search the memory", cmdSearch},
		{"qa", "manage QAs: list, show, add, validate, verify, freeze, deprecate, reactivate, delete, export, import", cmdQA},
		{"note", "scoped notes (conversation, user, project, global): add, put, get, list, search, rm, clear", cmdNote},
		{"export", "write memory out: --format md (trusted QAs into CLAUDE.md / AGENTS.md / GEMINI.md) or jsonl", cmdExport},
		{"import", "read memory in as candidates: --format md (Markdown notes) or jsonl", cmdImport},
		{"sync", "sync md: re-export the Markdown blocks whose trusted QAs changed (a pre-commit hook)", cmdSync},
		{"distill", "let the agent CLI distil a kept run into candidates ([distill], off by default)", cmdDistill},
		{"stats", "trust and usage summary of a project", cmdStats},
		{"grade", "grade a prompt's task level", cmdGrade},
		{"serve", "run the HTTP API for a team (memex serve keys new: make an API key)", cmdServe},
		{"hook", "run inside Claude Code, Codex or Gemini CLI: hook <host> <event>, hook install|uninstall|status <host>", cmdHook},
		{"mcp", "serve the memory to agents over MCP (stdio)", cmdMCP},
		{"ui", "the trust dashboard of the local store, in a browser (loopback only)", cmdUI},
		{"outbox", "deliver or inspect writes spooled while the memory service was down", cmdOutbox},
		{"config", "trust a repository's .memex.toml to set commands and stores (trust, untrust, list)", cmdConfig},
		{"doctor", "check the config, the store and the backends", cmdDoctor},
		{"version", "print the version", cmdVersion},
	}
}

// run is the whole program: it returns the process exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv, getwd: os.Getwd, registry: defaultRegistry()}
	return a.main(ctx, args)
}

func (a *app) main(ctx context.Context, args []string) int {
	err := a.dispatch(ctx, args)
	code := exitCode(err)
	var ce *exitCodeError
	var ue *usageError
	if err != nil && !errors.As(err, &ce) && !errors.Is(err, flag.ErrHelp) {
		switch {
		case code == exitCanceled:
			fmt.Fprintln(a.stderr, "memex: canceled")
		case errors.As(err, &ue) && ue.named && err.Error() == ue.msg:
			fmt.Fprintln(a.stderr, ue.msg)
		default:
			fmt.Fprintf(a.stderr, "memex: %v\n", err)
		}
		if code == exitUsage {
			fmt.Fprintln(a.stderr, "run 'memex help' or 'memex <command> --help' for usage")
		}
	}
	return code
}

func (a *app) dispatch(ctx context.Context, args []string) error {
	if len(args) == 0 {
		a.usage(a.stderr)
		return usagef("no command given")
	}
	name := args[0]
	switch name {
	case "help", "-h", "--help", "-help":
		if len(args) > 1 {
			return a.dispatch(ctx, []string{args[1], "--help"})
		}
		a.usage(a.stdout)
		return nil
	case "-v", "--version":
		name = "version"
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, a, args[1:])
		}
	}
	return usagef("unknown command %q", name)
}

func (a *app) usage(w io.Writer) {
	fmt.Fprintln(w, "memex — QA knowledge gatekeeper with trust scoring for coding agents")
	fmt.Fprintln(w, "\nUsage: memex <command> [flags] [args]")
	fmt.Fprintln(w, "\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nEvery command accepts --project, --store and --config; 'memex <command> --help' shows its flags and examples.")
}

// globalFlags are accepted by every command.
type globalFlags struct {
	project string
	store   string
	config  string
}

func (g *globalFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.project, "project", "", "project id (default: config, else derived from the git remote or path)")
	fs.StringVar(&g.store, "store", "", "store URL (default: file://$XDG_DATA_HOME/memex/memex.db)")
	fs.StringVar(&g.config, "config", "", "config file (default: $XDG_CONFIG_HOME/memex/config.toml and .memex.toml at the repo root)")
}

// newFlagSet returns a FlagSet whose --help prints usage and examples.
func (a *app) newFlagSet(name, usage, examples string) (*flag.FlagSet, *globalFlags) {
	fs := flag.NewFlagSet("memex "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g := &globalFlags{}
	g.register(fs)
	// Usage writes to fs.Output(), which is io.Discard while parsing (the
	// flag package calls Usage on every parse error); --help sets stdout.
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: memex %s\n\nFlags:\n", usage)
		fs.PrintDefaults()
		if examples != "" {
			fmt.Fprintf(w, "\nExamples:\n%s\n", strings.TrimRight(examples, "\n"))
		}
	}
	return fs, g
}

// printUsage prints fs's usage and examples to stdout.
func (a *app) printUsage(fs *flag.FlagSet) {
	fs.SetOutput(a.stdout)
	fs.Usage()
	fs.SetOutput(io.Discard)
}

// parseFlags parses flags anywhere among the arguments (memex run "q"
// --verify true works) and returns the positional arguments. "--" ends
// flag parsing. Errors are usage errors; --help prints usage and returns
// flag.ErrHelp.
func (a *app) parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				a.printUsage(fs)
				return nil, err
			}
			return nil, flagError(fs.Name(), err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// fs.Parse stops at the first positional argument or after "--".
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// flagError is a flag parse error of command name ("memex run") in
// memex's words, whatever the command: "memex run: unknown flag --bogus",
// "memex run: flag --verify needs a value", "memex run: invalid value "x"
// for --timeout: …".
func flagError(name string, err error) error {
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		msg = "unknown flag --" + strings.TrimLeft(f, "-")
	} else if f, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		msg = "flag --" + strings.TrimLeft(f, "-") + " needs a value"
	} else if strings.Contains(msg, " for flag -") {
		msg = strings.Replace(msg, " for flag -", " for --", 1)
	} else {
		msg = strings.Replace(msg, " for -", " for --", 1)
	}
	return &usageError{msg: name + ": " + msg, named: true}
}

// errStore wraps errors of opening a store with the URL (never its
// credentials).
func storeErr(url string, err error) error {
	return fmt.Errorf("store %s: %w", redactURL(url), err)
}
