package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/wire"
)

// cli is one test's memex environment: private config, data and working
// directories, and a store file in t.TempDir().
type cli struct {
	t     testing.TB
	dir   string
	cwd   string
	store string
	env   map[string]string
	// self and selfEnv start memex again (app.self): tests that let memex
	// run spawn the distiller set them (memexBinary, MEMEX_TEST_MAIN=1).
	self, selfEnv []string
}

func newCLI(t testing.TB) *cli {
	t.Helper()
	dir := t.TempDir()
	c := &cli{t: t, dir: dir, cwd: filepath.Join(dir, "work"), store: filepath.Join(dir, "store", "memex.db"),
		env: map[string]string{
			"HOME":            dir,
			"XDG_CONFIG_HOME": filepath.Join(dir, "config"),
			"XDG_DATA_HOME":   filepath.Join(dir, "data"),
		}}
	if err := os.MkdirAll(c.cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	return c
}

// run runs memex with args (plus --store and --project test unless the
// args already carry them) and returns the exit code and outputs.
func (c *cli) run(stdin string, args ...string) (code int, stdout, stderr string) {
	c.t.Helper()
	full := append([]string(nil), args...)
	if len(full) > 0 && full[0] != "version" && full[0] != "help" {
		joined := " " + strings.Join(full, " ")
		if !strings.Contains(joined, " --store") {
			full = append(full, "--store", c.store)
		}
		if !strings.Contains(joined, " --project") {
			full = append(full, "--project", "test")
		}
	}
	var out, errb bytes.Buffer
	a := &app{
		stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb,
		getenv:   func(k string) string { return c.env[k] },
		getwd:    func() (string, error) { return c.cwd, nil },
		registry: defaultRegistry(),
		self:     c.self, selfEnv: c.selfEnv,
	}
	code = a.main(c.t.Context(), full)
	return code, out.String(), errb.String()
}

func (c *cli) mustRun(stdin string, args ...string) string {
	c.t.Helper()
	code, out, errOut := c.run(stdin, args...)
	if code != 0 {
		c.t.Fatalf("memex %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// agentPath is the example agent of the repository.
func agentPath(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	p, err := filepath.Abs(filepath.Join(filepath.Dir(file), "..", "..", "examples", "agent", "agent.sh"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (c *cli) listRecords(project string) []core.Record {
	c.t.Helper()
	out := c.mustRun("", "qa", "list", "--json", "--project", project)
	var page core.ListPage
	if err := json.Unmarshal([]byte(out), &page); err != nil {
		c.t.Fatalf("qa list --json: %v\n%s", err, out)
	}
	return page.Items
}

func TestRunEntryPoint(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"version"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("version: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), runtime.Version()) {
		t.Errorf("version output %q lacks the Go version", out.String())
	}
	out.Reset()
	errb.Reset()
	if code := run(t.Context(), []string{"nosuchcommand"}, strings.NewReader(""), &out, &errb); code != exitUsage {
		t.Errorf("unknown command: exit %d, want %d", code, exitUsage)
	}
}

func TestUsageErrors(t *testing.T) {
	c := newCLI(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag on run", []string{"run", "--nope", "q"}, "-nope"},
		{"unknown flag on search", []string{"search", "--bogus", "q"}, "-bogus"},
		{"unknown flag on qa list", []string{"qa", "list", "--frob"}, "-frob"},
		{"unknown qa subcommand", []string{"qa", "frob"}, `unknown subcommand "frob"`},
		{"run without query", []string{"run"}, "no query"},
		{"search without query", []string{"search"}, "no query"},
		{"qa validate bad verdict", []string{"qa", "validate", "qa-1", "maybe"}, "pass or fail"},
		{"bad limit", []string{"search", "--limit", "0", "q"}, "--limit"},
		{"no command", nil, "no command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var code int
			var out, errOut string
			if tt.args == nil {
				var ob, eb bytes.Buffer
				code = run(t.Context(), nil, strings.NewReader(""), &ob, &eb)
				errOut = eb.String()
			} else {
				code, out, errOut = c.run("", tt.args...)
			}
			if out != "" {
				t.Errorf("a usage error wrote to stdout: %q", out)
			}
			if code != exitUsage {
				t.Errorf("exit %d, want %d; stderr: %s", code, exitUsage, errOut)
			}
			if !strings.Contains(errOut, tt.want) {
				t.Errorf("stderr %q does not mention %q", errOut, tt.want)
			}
		})
	}
}

func TestHelpShowsExamples(t *testing.T) {
	c := newCLI(t)
	for _, cmd := range [][]string{{"run"}, {"search"}, {"qa"}, {"qa", "import"}, {"stats"}, {"grade"}, {"doctor"}} {
		t.Run(strings.Join(cmd, " "), func(t *testing.T) {
			code, out, errOut := c.run("", append(cmd, "--help")...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if !strings.Contains(out, "Usage: memex") || !strings.Contains(out, "Examples:") {
				t.Errorf("help lacks usage or examples:\n%s", out)
			}
		})
	}
}

func TestParseFlagsInterleaved(t *testing.T) {
	c := newCLI(t)
	a := &app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	_ = c
	fs, _ := a.newFlagSet("x", "x", "")
	verify := fs.String("verify", "", "")
	pos, err := a.parseFlags(fs, []string{"fix it", "--verify", "true", "now", "--", "--literal"})
	if err != nil {
		t.Fatal(err)
	}
	if *verify != "true" {
		t.Errorf("verify = %q, want true", *verify)
	}
	if want := []string{"fix it", "now", "--literal"}; strings.Join(pos, "|") != strings.Join(want, "|") {
		t.Errorf("positional = %q, want %q", pos, want)
	}
}

func TestSearchJSONShape(t *testing.T) {
	c := newCLI(t)
	id := strings.TrimSpace(c.mustRun("", "qa", "add", "--question", "How do I run a single Go test?",
		"--answer", "Use go test -run '^TestName$' ./pkg to run one test.", "--tags", "go,testing"))
	out := c.mustRun("", "search", "--json", "--min-score", "0", "run a single go test")
	var raw []map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("search --json is not a top-level array: %v\n%s", err, out)
	}
	if len(raw) != 1 {
		t.Fatalf("got %d matches, want 1: %s", len(raw), out)
	}
	for _, k := range []string{"qa_id", "project_id", "question", "answer", "summary", "score", "relevance", "trust",
		"freshness", "validation_level", "level", "status", "metadata", "tags", "expiry_at", "source", "confidence"} {
		if _, ok := raw[0][k]; !ok {
			t.Errorf("match lacks %q: %v", k, raw[0])
		}
	}
	md, _ := raw[0]["metadata"].(map[string]any)
	stats, _ := md["stats"].(map[string]any)
	if _, ok := md["consecutive_fail"]; !ok || stats["consecutive_fail"] == nil {
		t.Errorf("metadata lacks consecutive_fail at both places: %v", md)
	}
	ms, skipped, err := wire.ParseSearchResponse([]byte(out))
	if err != nil || skipped != 0 || len(ms) != 1 || ms[0].QAID != id {
		t.Errorf("ParseSearchResponse = %v, %d, %v; want the added QA %s", ms, skipped, err, id)
	}

	// No match still prints an array.
	out = c.mustRun("", "search", "--json", "zebra quantum marmalade")
	if strings.TrimSpace(out) != "[]" {
		t.Errorf("empty search --json = %q, want []", out)
	}
}

func TestQAImportExportRoundTrip(t *testing.T) {
	c := newCLI(t)
	in := strings.Join([]string{
		`{"question": "How do I list open ports?", "answer": "Run ss -ltnp to list listening TCP ports with their processes."}`,
		``,
		`{"qa_id": "qa-fixed-1", "question": "How do I undo the last commit?", "answer": "git reset --soft HEAD~1 keeps the changes staged.", "tags": ["git"], "status": "verified"}`,
	}, "\n")
	c.mustRun(in, "qa", "import", "-", "--project", "src")
	recs := c.listRecords("src")
	if len(recs) != 2 {
		t.Fatalf("imported %d records, want 2", len(recs))
	}
	var fixed *core.Record
	for i := range recs {
		if recs[i].QAID == "qa-fixed-1" {
			fixed = &recs[i]
		}
	}
	if fixed == nil || fixed.Status != core.StatusVerified || len(fixed.Tags) != 1 {
		t.Fatalf("qa_id, status or tags of a minimal line not kept: %+v", fixed)
	}
	// Make the counters non-trivial, then round-trip through export and
	// import into a fresh store.
	c.mustRun("", "qa", "validate", "qa-fixed-1", "pass", "--project", "src")
	export := filepath.Join(c.dir, "export.jsonl")
	c.mustRun("", "qa", "export", "-o", export, "--project", "src")
	c2 := newCLI(t)
	c2.mustRun("", "qa", "import", export, "--project", "src")
	before, after := byID(c.listRecords("src")), byID(c2.listRecords("src"))
	if len(before) != 2 || len(after) != len(before) {
		t.Fatalf("the new store has %d records, the old %d; want 2 and 2", len(after), len(before))
	}
	for id, b := range before {
		a, ok := after[id]
		if !ok {
			t.Errorf("%s missing after the round trip", id)
			continue
		}
		// (Trust also rests on the creator's record in the reputation book,
		// which an export does not carry: the human verdict on qa-fixed-1
		// credited its creator, who also wrote the other QA. Its own trust
		// leaves that credit out, so it must survive exactly.)
		if a.Question != b.Question || a.Answer != b.Answer || a.Status != b.Status || id == "qa-fixed-1" && math.Abs(a.TrustScore-b.TrustScore) > 1e-6 || a.ValidationLevel != b.ValidationLevel ||
			a.SuccessCount != b.SuccessCount || a.StrongSignalCount != b.StrongSignalCount || !a.CreatedAt.Equal(b.CreatedAt) {
			t.Errorf("%s changed in the round trip:\n old %+v\n new %+v", id, b, a)
		}
	}
	if after["qa-fixed-1"].SuccessCount != 1 {
		t.Errorf("the human validation was not kept: %+v", after["qa-fixed-1"])
	}
	// Trust and freshness are computed at read time, so compare the export
	// line count, not bytes.
	if n := strings.Count(c2.mustRun("", "qa", "export", "--project", "src"), "\n"); n != 2 {
		t.Errorf("the new store exports %d lines, want 2", n)
	}
}

func byID(rs []core.Record) map[string]core.Record {
	m := map[string]core.Record{}
	for _, r := range rs {
		m[r.QAID] = r
	}
	return m
}

func TestQAImportBadLine(t *testing.T) {
	lines := []string{
		`{"question": "How do I list open ports?", "answer": "Run ss -ltnp to list listening ports."}`,
		`{"question": "How do I see disk usage?", "answer": "du -sh * | sort -h shows the biggest entries last."}`,
		`{"question": "broken", "answer": sk-secret-value-not-json`,
		`{"question": "How do I count lines?", "answer": "wc -l file counts the lines of a file."}`,
		`{"question": "", "answer": "no question"}`,
	}
	in := strings.Join(lines, "\n") + "\n"
	t.Run("stops at the first bad line", func(t *testing.T) {
		c := newCLI(t)
		code, _, errOut := c.run(in, "qa", "import", "-")
		if code != exitError {
			t.Fatalf("exit %d, want %d", code, exitError)
		}
		if !strings.Contains(errOut, "line 3") {
			t.Errorf("error does not name line 3: %s", errOut)
		}
		if strings.Contains(errOut, "sk-secret") {
			t.Errorf("error quotes the bad line: %s", errOut)
		}
		if n := len(c.listRecords("test")); n != 2 {
			t.Errorf("%d records kept, want the 2 before the bad line", n)
		}
	})
	t.Run("skip-invalid reports every bad line", func(t *testing.T) {
		c := newCLI(t)
		code, _, errOut := c.run(in, "qa", "import", "--skip-invalid", "-")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		for _, want := range []string{"line 3", "line 5"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("stderr does not report %s: %s", want, errOut)
			}
		}
		if n := len(c.listRecords("test")); n != 3 {
			t.Errorf("%d records imported, want 3", n)
		}
	})
	t.Run("full records before the bad line are kept", func(t *testing.T) {
		src := newCLI(t)
		src.mustRun(strings.Join(lines[:2], "\n")+"\n"+lines[3]+"\n", "qa", "import", "-")
		exported := strings.Split(strings.TrimSpace(src.mustRun("", "qa", "export")), "\n")
		if len(exported) != 3 {
			t.Fatalf("exported %d records, want 3", len(exported))
		}
		in := exported[0] + "\n" + exported[1] + "\n{not json\n" + exported[2] + "\n"
		dst := newCLI(t)
		code, _, errOut := dst.run(in, "qa", "import", "-")
		if code != exitError || !strings.Contains(errOut, "line 3") {
			t.Fatalf("exit %d, stderr %q; want 1 naming line 3", code, errOut)
		}
		if n := len(dst.listRecords("test")); n != 2 {
			t.Errorf("%d full records kept, want the 2 before the bad line", n)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		c := newCLI(t)
		code, _, errOut := c.run("", "qa", "import", filepath.Join(c.dir, "nope.jsonl"))
		if code != exitError || !strings.Contains(errOut, "nope.jsonl") {
			t.Errorf("exit %d, stderr %q; want 1 naming the file", code, errOut)
		}
	})
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		toml string
		want []string
	}{
		{"malformed", "[memory]\ntimeout = \"2s\"\nstore = \n", []string{"config.toml:3", "malformed"}},
		{"unknown key", "[memory]\ntimeout = \"2s\"\n\nsearch_limt = 3\n", []string{"config.toml:4", `"memory.search_limt"`}},
		{"unknown section", "[run]\nbackend = \"claude\"\n[gatekeepr]\nmax_inject = 2\n", []string{"config.toml:", "gatekeepr"}},
		{"bad profile", "[gatekeeper]\nprofile = \"fast\"\n", []string{"gatekeeper.profile"}},
		{"bad duration", "[memory]\ntimeout = \"soon\"\n", []string{"config.toml", "duration"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCLI(t)
			path := filepath.Join(c.env["XDG_CONFIG_HOME"], "memex", "config.toml")
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(tt.toml), 0o600); err != nil {
				t.Fatal(err)
			}
			code, _, errOut := c.run("", "search", "q")
			if code != exitError {
				t.Errorf("exit %d, want %d", code, exitError)
			}
			for _, w := range tt.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("error %q does not contain %q", errOut, w)
				}
			}
		})
	}
}

func TestConfigPrecedence(t *testing.T) {
	c := newCLI(t)
	path := filepath.Join(c.dir, "explicit.toml")
	if err := os.WriteFile(path, []byte("[memory]\nproject = \"from-file\"\n[run]\nbackend = \"codex\"\n[gatekeeper]\nprofile = \"compat\"\nmax_inject = 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	get := func(env map[string]string, g globalFlags) Config {
		t.Helper()
		cfg, err := loadConfig(func(k string) string { return env[k] }, c.cwd, &g)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	cfg := get(map[string]string{}, globalFlags{config: path})
	if cfg.Project != "from-file" || cfg.Backend != "codex" || cfg.Engine.Gatekeeper.Order != "level_first" || cfg.Engine.Gatekeeper.MaxInject != 2 {
		t.Errorf("file not applied: %+v", cfg)
	}
	cfg = get(map[string]string{"MEMEX_PROJECT": "from-env", "MEMEX_BACKEND": "gemini"}, globalFlags{config: path})
	if cfg.Project != "from-env" || cfg.Backend != "gemini" {
		t.Errorf("env does not override the file: project %q backend %q", cfg.Project, cfg.Backend)
	}
	cfg = get(map[string]string{"MEMEX_PROJECT": "from-env"}, globalFlags{config: path, project: "from-flag"})
	if cfg.Project != "from-flag" {
		t.Errorf("flag does not override env: %q", cfg.Project)
	}
	if _, err := loadConfig(func(string) string { return "" }, c.cwd, &globalFlags{config: filepath.Join(c.dir, "missing.toml")}); err == nil {
		t.Error("an explicit --config that does not exist is not an error")
	}
}

func TestRemoteProject(t *testing.T) {
	tests := []struct{ in, want string }{
		{"git@github.com:acme/app.git", "github.com/acme/app"},
		{"https://github.com/acme/app.git", "github.com/acme/app"},
		{"https://user:tok3n@gitlab.example.com:8443/group/sub/app.git/", "gitlab.example.com/group/sub/app"},
		{"ssh://git@GitHub.com:22/acme/app", "github.com/acme/app"},
		{"/srv/git/app.git", "srv/git/app"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got := remoteProject(tt.in)
			if got != tt.want {
				t.Errorf("remoteProject(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if strings.Contains(core.SanitizeProjectID(got), "tok3n") {
				t.Error("credentials leaked into the project id")
			}
		})
	}
}

// TestGitRepoConfigAndProject checks the project id derived from a real
// git remote and that .memex.toml at the repo root is read from a subdir.
func TestGitRepoConfigAndProject(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	c := newCLI(t)
	repo := c.cwd
	for _, args := range [][]string{{"init", "-q"}, {"remote", "add", "origin", "https://bob:t0ken@GitHub.com/Acme/App.git"}} {
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	sub := filepath.Join(repo, "pkg", "deep")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(func(k string) string { return c.env[k] }, sub, &globalFlags{})
	if err != nil {
		t.Fatal(err)
	}
	id, from := resolveProject(cfg, sub)
	if id != "github-com-acme-app" || from != "git remote origin" {
		t.Errorf("project = %q from %s, want github-com-acme-app from git remote origin", id, from)
	}
	if err := os.WriteFile(filepath.Join(repo, ".memex.toml"), []byte("[run]\nbackend = \"gemini\"\n[memory]\nproject = \"team\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err = loadConfig(func(k string) string { return c.env[k] }, sub, &globalFlags{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Backend != "claude" || cfg.Project != "team" {
		t.Errorf(".memex.toml at the repo root: backend %q project %q, want claude (a repository may not choose the backend) and team", cfg.Backend, cfg.Project)
	}
	if err := os.WriteFile(filepath.Join(repo, ".memex.toml"), []byte("[run]\nbakend = \"gemini\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadConfig(func(k string) string { return c.env[k] }, sub, &globalFlags{}); err == nil ||
		!strings.Contains(err.Error(), ".memex.toml:2") || !strings.Contains(err.Error(), "run.bakend") {
		t.Errorf("unknown key in .memex.toml: %v", err)
	}
}

func TestStoreRegistry(t *testing.T) {
	t.Parallel() // waits on an unreachable Redis
	r := defaultRegistry()
	// An unreachable Redis is an error naming the store (never "unknown scheme").
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := r.open(ctx, "redis://127.0.0.1:1/0", DefaultConfig()); err == nil || strings.Contains(err.Error(), "unknown scheme") {
		t.Errorf("open an unreachable redis: %v, want a connection error", err)
	}
	// http(s) stores open without contacting the service.
	for _, u := range []string{"http://memex.example.com", "https://memex.example.com/base"} {
		s, err := r.open(t.Context(), u, DefaultConfig())
		if err != nil {
			t.Fatalf("open %s: %v", u, err)
		}
		if s.Name() != "http" {
			t.Errorf("open %s: plugin %s", u, s.Name())
		}
		_ = closeStore(s)
	}
	if _, err := r.open(t.Context(), "https://alice:s3cret@memex.example.com", DefaultConfig()); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("credentials in an http URL: %v", err)
	}
	if _, err := r.open(t.Context(), "ftp://x", DefaultConfig()); err == nil || !strings.Contains(err.Error(), "unknown scheme") {
		t.Errorf("ftp: %v", err)
	}
	if got := redactURL("https://alice:s3cret@memex.example.com/x"); strings.Contains(got, "s3cret") {
		t.Errorf("redactURL kept the password: %s", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("duplicate registration did not panic")
		}
	}()
	r.register("file", openEmbedded)
}

// TestEveryKnobHasAKey fails when a gatekeeper or extract knob has no config
// key (or the key does not reach the field).
func TestEveryKnobHasAKey(t *testing.T) {
	keys := map[string]string{ // field → TOML line setting a non-default value
		"ActiveStatuses":            "[gatekeeper]\nactive_statuses = [\"verified\"]",
		"MinScore":                  "[gatekeeper]\nmin_score = 0.5",
		"MaxInject":                 "[gatekeeper]\nmax_inject = 9",
		"MinLevelInject":            "[gatekeeper]\nmin_level_inject = 3",
		"MinLevelFallback":          "[gatekeeper]\nmin_level_fallback = 2",
		"MinTrustShow":              "[gatekeeper]\nmin_trust_show = 0.7",
		"BlockIfConsecutiveFailGE":  "[gatekeeper]\nblock_if_consecutive_fail_ge = 5",
		"SkipIfTop1ScoreGE":         "[gatekeeper]\nskip_if_top1_score_ge = 0.9",
		"Order":                     "[gatekeeper]\norder = \"level_first\"",
		"ExploreSlots":              "[gatekeeper]\nexplore_slots = 0",
		"Fallback":                  "[gatekeeper]\nfallback = true",
		"ExcludeStale":              "[gatekeeper]\nexclude_stale = true",
		"MaxItems":                  "[prompt_inject]\nmax_items = 7",
		"MaxAnswerChars":            "[prompt_inject]\nmax_answer_chars = 100",
		"MaxBlockChars":             "[prompt_inject]\nmax_block_chars = 2000",
		"Placement":                 "[prompt_inject]\nplacement = \"system\"",
		"IncludeMeta":               "[prompt_inject]\ninclude_meta = false",
		"extract.MaxAnswerChars":    "[candidate_extract]\nmax_answer_chars = 100",
		"extract.MinAnswerChars":    "[candidate_extract]\nmin_answer_chars = 1",
		"extract.MaxSteps":          "[candidate_extract]\nmax_steps = 1",
		"extract.StrictSecretBlock": "[candidate_extract]\nstrict_secret_block = true",
	}
	check := func(prefix string, def any, get func(Config) any) {
		rt := reflect.TypeOf(def)
		for i := range rt.NumField() {
			name := rt.Field(i).Name
			toml, ok := keys[prefix+name]
			if !ok {
				t.Errorf("%s%s has no config key", prefix, name)
				continue
			}
			cfg := DefaultConfig()
			if err := applyFile(&cfg, "test.toml", []byte(toml)); err != nil {
				t.Errorf("%s: %v", toml, err)
				continue
			}
			if reflect.DeepEqual(reflect.ValueOf(get(cfg)).Field(i).Interface(), reflect.ValueOf(def).Field(i).Interface()) {
				t.Errorf("%q did not change %s%s", toml, prefix, name)
			}
		}
	}
	check("", DefaultConfig().Engine.Gatekeeper, func(c Config) any { return c.Engine.Gatekeeper })
	check("extract.", DefaultConfig().Engine.Extract, func(c Config) any { return c.Engine.Extract })
}

func TestQAManagement(t *testing.T) {
	c := newCLI(t)
	id := strings.TrimSpace(c.mustRun("", "qa", "add", "--question", "How do I list open ports on Linux?",
		"--answer", "Run ss -ltnp: it lists listening TCP sockets with their processes."))

	var shown struct {
		Record core.Record `json:"record"`
	}
	if err := json.Unmarshal([]byte(c.mustRun("", "qa", "show", "--json", id)), &shown); err != nil {
		t.Fatal(err)
	}
	if shown.Record.QAID != id || shown.Record.Status != core.StatusCandidate {
		t.Fatalf("qa show --json = %+v", shown.Record)
	}
	before := shown.Record.TrustScore

	c.mustRun("", "qa", "validate", id, "pass")
	if err := json.Unmarshal([]byte(c.mustRun("", "qa", "show", "--json", id)), &shown); err != nil {
		t.Fatal(err)
	}
	if shown.Record.TrustScore <= before || shown.Record.StrongSignalCount != 1 {
		t.Errorf("a human pass did not count as strong evidence: trust %.3f → %.3f, strong %d",
			before, shown.Record.TrustScore, shown.Record.StrongSignalCount)
	}

	c.mustRun("", "qa", "deprecate", id)
	if out := c.mustRun("", "search", "--json", "--min-score", "0", "list open ports"); strings.Contains(out, id) {
		t.Errorf("a deprecated QA is still found: %s", out)
	}

	c.mustRun("", "qa", "delete", id)
	code, _, errOut := c.run("", "qa", "show", id)
	if code != exitError || !strings.Contains(errOut, "not found") {
		t.Errorf("qa show of a deleted QA: exit %d, %q", code, errOut)
	}
}

func TestJSONOutputs(t *testing.T) {
	c := newCLI(t)
	var g core.TaskGrade
	if err := json.Unmarshal([]byte(c.mustRun("", "grade", "--json", "translate this to French")), &g); err != nil || g.TaskLevel != "L0" {
		t.Errorf("grade --json = %+v, %v; want L0", g, err)
	}
	var st map[string]any
	if err := json.Unmarshal([]byte(c.mustRun("", "stats", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"project_id", "total", "by_status", "by_level", "trust_histogram", "use_rate"} {
		if _, ok := st[k]; !ok {
			t.Errorf("stats --json lacks %q", k)
		}
	}
	var page map[string]any
	if err := json.Unmarshal([]byte(c.mustRun("", "qa", "list", "--json")), &page); err != nil {
		t.Fatal(err)
	}
	if items, ok := page["items"].([]any); !ok || len(items) != 0 {
		t.Errorf("qa list --json of an empty project: %v, want items: []", page)
	}
	if _, ok := page["next_cursor"]; !ok {
		t.Error("qa list --json lacks next_cursor")
	}
}

func TestRunCanceled(t *testing.T) {
	c := newCLI(t)
	ctx, cancel := context.WithCancel(t.Context())
	a := &app{
		stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{},
		getenv: func(k string) string { return c.env[k] }, getwd: func() (string, error) { return c.cwd, nil },
		registry: defaultRegistry(),
	}
	done := make(chan int, 1)
	start := time.Now()
	go func() {
		done <- a.main(ctx, []string{"run", "--store", c.store, "--project", "test", "--backend", "sleep 30", "q"})
	}()
	time.Sleep(300 * time.Millisecond)
	cancel()
	select {
	case code := <-done:
		if code != exitCanceled {
			t.Errorf("exit %d, want %d", code, exitCanceled)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("took %s to stop", d)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("memex run did not stop after cancel")
	}
}

func TestDoctor(t *testing.T) {
	t.Parallel() // waits on an unreachable Redis
	c := newCLI(t)
	c.env["MEMEX_BACKEND"] = agentPath(t)
	out := c.mustRun("", "doctor")
	for _, want := range []string{`(?m)^ok\s+store\s.*embedded`, `(?m)^ok\s+project\s+test \(from --project\)`,
		`MEMEX_BACKEND set`, `(?m)^ok\s+default backend\s.*agent\.sh`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("doctor output does not match %s:\n%s", want, out)
		}
	}
	code, out, _ := c.run("", "doctor", "--store", "redis://u:pw@localhost:1")
	if code != exitError || !regexp.MustCompile(`(?m)^FAIL\s+store`).MatchString(out) || strings.Contains(out, "pw@") {
		t.Errorf("doctor with an unavailable store: exit %d\n%s", code, out)
	}
}

func TestOriginURL(t *testing.T) {
	cfg := "[core]\n\tbare = false\n[remote \"upstream\"]\n\turl = git@github.com:other/x.git\n[remote \"origin\"]\n\turl = https://user:tok@github.com/Acme/App.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
	if got := originURL(cfg); got != "https://user:tok@github.com/Acme/App.git" {
		t.Errorf("originURL = %q", got)
	}
	if got := remoteProject(originURL(cfg)); got != "github.com/Acme/App" {
		t.Errorf("remoteProject = %q", got)
	}
	if originURL("[remote \"upstream\"]\n\turl = x\n") != "" {
		t.Error("a remote other than origin was taken")
	}
}
