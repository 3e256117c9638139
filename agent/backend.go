package agent

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrBackendNotFound is wrapped by Resolve when the backend's executable
// cannot be found.
var ErrBackendNotFound = errors.New("executable not found")

// ErrBadCommand is wrapped by Resolve when a backend command line is empty
// or cannot be split into words (an unterminated quote).
var ErrBadCommand = errors.New("bad backend command")

// Backend is a resolved agent command.
type Backend struct {
	Name   string   // claude, codex, gemini or the command's name
	Argv   []string // full command line (argv[0] resolved)
	Format Format
	// SystemFlag is the flag that appends text to the agent's system
	// prompt (claude: --append-system-prompt); empty when the backend has
	// none, and memex places everything before the query.
	SystemFlag string
}

// Resolve turns a --backend value into a Backend. name is "claude",
// "codex", "gemini", or a command line (a path or a bare name, with
// arguments quoted as in a shell; no shell runs it). model is passed to the
// three known CLIs only; extraArgs are appended to the command line (before
// codex's "-"). lookPath finds executables; nil means exec.LookPath.
func Resolve(name, model string, extraArgs []string, lookPath func(string) (string, error)) (Backend, error) {
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	words, err := SplitWords(name)
	if err != nil {
		return Backend{}, fmt.Errorf("backend: %w: %w", ErrBadCommand, err)
	}
	if len(words) == 0 {
		return Backend{}, fmt.Errorf("backend: %w: empty command; pass --backend claude|codex|gemini|<command>", ErrBadCommand)
	}
	exe, err := lookPath(words[0])
	if err != nil || exe == "" {
		where := "in PATH"
		if strings.ContainsRune(words[0], filepath.Separator) || strings.ContainsRune(words[0], '/') {
			where = "at that path"
		}
		return Backend{}, fmt.Errorf("backend %q: %w %s; install it or pass --backend <command>", words[0], ErrBackendNotFound, where)
	}
	rest := append(words[1:len(words):len(words)], extraArgs...)
	b := Backend{Name: commandName(words[0]), Format: FormatText}
	switch b.Name {
	case "claude":
		b.Format, b.SystemFlag = FormatClaude, "--append-system-prompt"
		b.Argv = []string{exe, "-p", "--output-format", "stream-json", "--verbose"}
		if model != "" {
			b.Argv = append(b.Argv, "--model", model)
		}
		b.Argv = append(b.Argv, rest...)
	case "codex":
		b.Format = FormatCodex
		b.Argv = []string{exe, "exec", "--json", "--skip-git-repo-check"}
		if model != "" {
			b.Argv = append(b.Argv, "--model", model)
		}
		b.Argv = append(append(b.Argv, rest...), "-")
	case "gemini":
		b.Format = FormatGemini
		b.Argv = []string{exe, "-o", "stream-json", "-y"}
		if model != "" {
			b.Argv = append(b.Argv, "-m", model)
		}
		b.Argv = append(b.Argv, rest...)
	default:
		b.Argv = append([]string{exe}, rest...)
	}
	return b, nil
}

// commandName is the executable's file name without a Windows extension.
func commandName(word string) string {
	base := filepath.Base(strings.ReplaceAll(word, `\`, "/"))
	for _, ext := range []string{".exe", ".cmd", ".bat", ".ps1"} {
		if strings.EqualFold(filepath.Ext(base), ext) {
			return base[:len(base)-len(ext)]
		}
	}
	return base
}

// SplitWords splits a command line into words the way a POSIX shell does
// for quoting, without expanding anything: blanks separate words; 'single
// quotes' keep everything literally; "double quotes" keep everything but a
// backslash before " \ $ ` or a newline; outside quotes a backslash keeps the
// next character (a backslash-newline is removed).
func SplitWords(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		in    bool // a word has started (even an empty '' one)
	)
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case c == '\\':
			in = true
			if i+1 < len(rs) {
				i++
				if rs[i] != '\n' {
					cur.WriteRune(rs[i])
				}
			} else {
				cur.WriteRune(c)
			}
		case c == '\'':
			in = true
			j := i + 1
			for j < len(rs) && rs[j] != '\'' {
				j++
			}
			if j == len(rs) {
				return nil, errors.New("unterminated single quote")
			}
			cur.WriteString(string(rs[i+1 : j]))
			i = j
		case c == '"':
			in = true
			j := i + 1
			for ; j < len(rs) && rs[j] != '"'; j++ {
				if rs[j] == '\\' && j+1 < len(rs) {
					switch rs[j+1] {
					case '"', '\\', '$', '`':
						j++
						cur.WriteRune(rs[j])
						continue
					case '\n':
						j++
						continue
					}
				}
				cur.WriteRune(rs[j])
			}
			if j == len(rs) {
				return nil, errors.New("unterminated double quote")
			}
			i = j
		default:
			in = true
			cur.WriteRune(c)
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}
