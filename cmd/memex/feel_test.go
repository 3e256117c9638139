package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// memex doctor names where the project id really came from: the flag, the
// environment, the config file (by path), the git remote origin, the git
// root or the working directory.
func TestDoctorNamesProjectSource(t *testing.T) {
	c := newCLI(t)
	c.env["MEMEX_BACKEND"] = agentPath(t)
	project := func(args ...string) string {
		t.Helper()
		_, out, _ := c.run("", append([]string{"doctor"}, args...)...)
		m := regexp.MustCompile(`(?m)^ok\s+project\s+(.*)$`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("doctor %v prints no project line:\n%s", args, out)
		}
		return m[1]
	}
	if got := project("--project", "flagged"); got != "flagged (from --project)" {
		t.Errorf("--project: %q", got)
	}
	c.env["MEMEX_PROJECT"] = "from-env"
	if got := project("--project", ""); got != "from-env (from MEMEX_PROJECT)" {
		t.Errorf("MEMEX_PROJECT: %q", got)
	}
	delete(c.env, "MEMEX_PROJECT")
	cfgFile := filepath.Join(c.dir, "memex.toml")
	if err := os.WriteFile(cfgFile, []byte("[memory]\nproject = \"filed\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := project("--project", "", "--config", cfgFile); got != "filed (from config file "+cfgFile+")" {
		t.Errorf("config file: %q", got)
	}
	if got := project("--project", ""); !strings.HasSuffix(got, "(from working directory "+c.cwd+")") {
		t.Errorf("no project anywhere: %q, want it from the working directory", got)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is not installed")
	}
	for _, args := range [][]string{{"init", "-q"}, {"remote", "add", "origin", "https://github.com/acme/app.git"}} {
		if out, err := exec.Command("git", append([]string{"-C", c.cwd}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if got := project("--project", ""); got != "github-com-acme-app (from git remote origin)" {
		t.Errorf("git remote: %q", got)
	}
}

// An unknown flag reads "memex <command>: unknown flag --bogus" for every
// command (one place: parseFlags), with the usage exit code.
func TestUnknownFlagEveryCommand(t *testing.T) {
	c := newCLI(t)
	// Commands whose flags follow a subcommand or a required choice.
	lead := map[string][]string{
		"qa": {"list"}, "note": {"list"}, "hook": {"status"}, "sync": {"md"},
		"export": {"--format", "md"}, "import": {"--format", "md"},
	}
	for _, cmd := range commands() {
		args := append(append([]string{cmd.name}, lead[cmd.name]...), "--bogus")
		code, _, errOut := c.run("", args...)
		first, _, _ := strings.Cut(errOut, "\n")
		if code != exitUsage || !regexp.MustCompile(`^memex `+cmd.name+`( [a-z]+)?: unknown flag --bogus$`).MatchString(first) {
			t.Errorf("memex %s: exit %d, first line %q; want \"memex %s…: unknown flag --bogus\"", strings.Join(args, " "), code, first, cmd.name)
		}
	}
	if _, _, errOut := c.run("", "run", "--timeout", "soon", "q"); !strings.HasPrefix(errOut, `memex run: invalid value "soon" for --timeout`) {
		t.Errorf("a bad value: %q", errOut)
	}
}

// A config value out of its range is an error naming the key, the line
// and the valid range.
func TestConfigRangeErrors(t *testing.T) {
	c := newCLI(t)
	cfgFile := filepath.Join(c.dir, "memex.toml")
	for _, tc := range []struct{ toml, want string }{
		{"# tuning\n[gatekeeper]\norder = \"trust\"\nmin_score = 7\n", ":4: gatekeeper.min_score: 7 is out of range: must be between 0 and 1"},
		{"[gatekeeper]\nmin_trust_show = -0.5\n", ":2: gatekeeper.min_trust_show: -0.5 is out of range: must be between 0 and 1"},
		{"[gatekeeper]\nmin_level_inject = 4\n", ":2: gatekeeper.min_level_inject: 4 is out of range: must be between 0 and 3"},
		{"[memory]\nmin_score = 1.5\n", ":2: memory.min_score: 1.5 is out of range: must be between 0 and 1"},
	} {
		if err := os.WriteFile(cfgFile, []byte(tc.toml), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := c.run("", "search", "--config", cfgFile, "anything")
		if code == 0 || !strings.Contains(errOut, cfgFile+tc.want) {
			t.Errorf("%q: exit %d, %q; want %q", tc.toml, code, errOut, tc.want)
		}
	}
}

// memex run says what memory did in one line on stderr after the run;
// --quiet turns it off.
func TestRunSummaryLine(t *testing.T) {
	c := newCLI(t)
	agent := agentPath(t)
	const q = "How do I find a data race in my Go tests?"
	summary := func(args ...string) string {
		t.Helper()
		code, _, errOut := c.run("", append([]string{"run", "--seed", "1", "--backend", agent, "--verify", "true"}, args...)...)
		if code != 0 {
			t.Fatalf("memex run: exit %d\n%s", code, errOut)
		}
		var last string
		for _, l := range strings.Split(strings.TrimSpace(errOut), "\n") {
			if strings.HasPrefix(l, "memex: injected") || strings.HasPrefix(l, "memex: memory") {
				last = l
			}
		}
		return last
	}
	if got := summary(q); !regexp.MustCompile(`^memex: injected nothing · learned qa_[0-9a-z]+$`).MatchString(got) {
		t.Errorf("first run: %q", got)
	}
	if got := summary(q); !regexp.MustCompile(`^memex: injected 1 \((0 trusted, 1 probation|1 trusted, 0 probation)\) · cited 1 · learned nothing \(covered\)$`).MatchString(got) {
		t.Errorf("second run: %q", got)
	}
	if got := summary("--quiet", q); got != "" {
		t.Errorf("--quiet printed %q", got)
	}
}

// On --timeout memex says why it stopped the agent.
func TestRunTimeoutSaysWhy(t *testing.T) {
	c := newCLI(t)
	agent := filepath.Join(c.dir, "slow.sh")
	if err := os.WriteFile(agent, []byte("#!/bin/sh\ncat >/dev/null\nsleep 10\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := c.run("", "run", "--backend", agent, "--timeout", "500ms", "a long task")
	if code != 124 || !strings.Contains(errOut, "memex: stopped the agent: --timeout 500ms reached (exit 124)") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
}

// The spinner draws after a silence, clears its line before the agent's
// output, and leaves a clean line when it stops.
func TestSpinner(t *testing.T) {
	var buf syncBuffer
	sp := newSpinner(&buf, 30*time.Millisecond, 10*time.Millisecond)
	w := sp.wrap(&buf)
	sp.run()
	time.Sleep(150 * time.Millisecond)
	if !strings.Contains(buf.String(), "the agent is working") {
		t.Fatalf("no frame after a silence: %q", buf.String())
	}
	if _, err := w.Write([]byte("output\n")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "\r\033[Koutput\n") {
		t.Errorf("the frame was not cleared before the output: %q", buf.String())
	}
	time.Sleep(80 * time.Millisecond)
	sp.stop()
	if s := buf.String(); !strings.HasSuffix(s, "\r\033[K") && !strings.HasSuffix(s, "output\n") {
		t.Errorf("the line is not clean after stop: %q", s)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The spinner runs only when stderr is a terminal, and never with --quiet.
func TestSpinnerOnlyOnTTY(t *testing.T) {
	a := &app{stderr: &bytes.Buffer{}}
	if sp := (&agentRun{a: a}).spinner(); sp != nil {
		t.Error("a spinner on a stderr that is not a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if sp := (&agentRun{a: &app{stderr: f}}).spinner(); sp != nil {
		t.Error("a spinner on a stderr that is a file")
	}
}
