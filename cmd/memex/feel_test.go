package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
