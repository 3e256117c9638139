package agent

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeLook finds every name under /bin, except "missing" and paths under
// /nope.
func fakeLook(name string) (string, error) {
	if name == "missing" || strings.HasPrefix(name, "/nope/") {
		return "", exec.ErrNotFound
	}
	if strings.Contains(name, "/") {
		return name, nil
	}
	return "/bin/" + name, nil
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name, backend, model string
		extra                []string
		want                 Backend
	}{
		{"claude", "claude", "", nil, Backend{Name: "claude", Format: FormatClaude, SystemFlag: "--append-system-prompt",
			Argv: []string{"/bin/claude", "-p", "--output-format", "stream-json", "--verbose"}}},
		{"claude with model and extra args", "claude", "opus", []string{"--max-turns", "5"}, Backend{Name: "claude", Format: FormatClaude, SystemFlag: "--append-system-prompt",
			Argv: []string{"/bin/claude", "-p", "--output-format", "stream-json", "--verbose", "--model", "opus", "--max-turns", "5"}}},
		{"codex reads the prompt from stdin", "codex", "gpt-5-codex", []string{"--full-auto"}, Backend{Name: "codex", Format: FormatCodex,
			Argv: []string{"/bin/codex", "exec", "--json", "--skip-git-repo-check", "--model", "gpt-5-codex", "--full-auto", "-"}}},
		{"gemini", "gemini", "gemini-2.5-pro", nil, Backend{Name: "gemini", Format: FormatGemini,
			Argv: []string{"/bin/gemini", "-o", "stream-json", "-y", "-m", "gemini-2.5-pro"}}},
		{"known CLI by path with its own flags", "/opt/ai/bin/claude --dangerously-skip-permissions", "", nil, Backend{Name: "claude", Format: FormatClaude, SystemFlag: "--append-system-prompt",
			Argv: []string{"/opt/ai/bin/claude", "-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"}}},
		{"other command gets no model", "aider --yes", "gpt-4o", nil, Backend{Name: "aider", Format: FormatText,
			Argv: []string{"/bin/aider", "--yes"}}},
		{"quoted words", `./agent.sh --system 'be brief' "two words" a\ b`, "", []string{"x"}, Backend{Name: "agent.sh", Format: FormatText,
			Argv: []string{"./agent.sh", "--system", "be brief", "two words", "a b", "x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resolve(tt.backend, tt.model, tt.extra, fakeLook)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("backend (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	tests := []struct {
		name, backend string
		is            error
		msg           string
	}{
		{"not in PATH", "missing", ErrBackendNotFound, `backend "missing": executable not found in PATH; install it or pass --backend <command>`},
		{"not at path", "/nope/agent --flag", ErrBackendNotFound, `backend "/nope/agent": executable not found at that path; install it or pass --backend <command>`},
		{"empty", "   ", ErrBadCommand, "empty command"},
		{"open quote", `run "oops`, ErrBadCommand, "unterminated double quote"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Resolve(tt.backend, "", nil, fakeLook)
			if !errors.Is(err, tt.is) {
				t.Fatalf("err = %v, want %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("err = %q, want it to contain %q", err, tt.msg)
			}
		})
	}
	t.Run("real lookup of a missing claude", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		_, err := Resolve("claude", "", nil, nil)
		if !errors.Is(err, ErrBackendNotFound) || !strings.Contains(err.Error(), "--backend") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestSplitWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  a   b\tc\n", []string{"a", "b", "c"}},
		{`'it''s'`, []string{"its"}},
		{`"say \"hi\" \$HOME \n"`, []string{`say "hi" $HOME \n`}},
		{`'' ""`, []string{"", ""}},
		{`a\ b\\c`, []string{`a b\c`}},
		{`pre"mid dle"post`, []string{"premid dlepost"}},
		{"日本 'ü x'", []string{"日本", "ü x"}},
		{`trailing\`, []string{`trailing\`}},
		{`$HOME *.go`, []string{"$HOME", "*.go"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := SplitWords(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []string{`'open`, `"open`, `a "b`} {
		if _, err := SplitWords(bad); err == nil {
			t.Errorf("SplitWords(%q): no error", bad)
		}
	}
}
