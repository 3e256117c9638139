package evidence

import (
	"path"
	"regexp"
	"strings"
	"sync"
)

// TestCommand reports whether the shell command line runs tests or a build
// (go test/build/vet, cargo test/build/check, pytest, npm test, make,
// mvn, gradle, tsc, jest, vitest, dotnet, ctest, bazel, …), anywhere in a
// list or pipeline, behind env assignments, sudo/time/timeout, runners such
// as npx or uv run, or inside sh -c '…'.
func TestCommand(cmd string) bool {
	recognised, _ := testCommand(cmd)
	return recognised
}

// testCommand also reports whether the command line's exit status is the
// test's: false when a test segment's status is masked by what follows it
// (`| tail` without pipefail, `|| true`, `; echo done`, `&`).
func testCommand(cmd string) (recognised, decisive bool) {
	segs := splitShell(cmd)
	pipefail := strings.Contains(cmd, "pipefail")
	for i, s := range segs {
		rec, dec := segmentIsTest(s.text)
		if !rec {
			continue
		}
		recognised = true
		masked := !dec
		for _, t := range segs[i:] {
			if t.op == "" || t.op == "&&" || (t.op == "|" && pipefail) {
				continue
			}
			masked = true
		}
		if !masked {
			decisive = true
		}
	}
	return recognised, decisive
}

type shellSeg struct {
	text string
	op   string // operator after the segment ("" at the end)
}

// splitShell splits a command line at &&, ||, |, ;, & and newlines outside
// quotes.
func splitShell(cmd string) []shellSeg {
	var segs []shellSeg
	var quote byte
	start := 0
	emit := func(end int, op string) {
		if t := strings.TrimSpace(cmd[start:end]); t != "" {
			segs = append(segs, shellSeg{text: t, op: op})
		} else if len(segs) > 0 && op != "" {
			segs[len(segs)-1].op = op
		}
	}
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\\':
			i++
		case c == '\'' || c == '"':
			quote = c
		case c == ';' || c == '\n':
			emit(i, ";")
			start = i + 1
		case c == '&' || c == '|':
			op := string(c)
			if i+1 < len(cmd) && cmd[i+1] == c {
				op += string(c)
			}
			if c == '&' && (i > 0 && (cmd[i-1] == '>' || cmd[i-1] == '<')) || (c == '&' && i+1 < len(cmd) && cmd[i+1] == '>') {
				continue // 2>&1, &>file
			}
			emit(i, op)
			i += len(op) - 1
			start = i + 1
		}
	}
	emit(len(cmd), "")
	return segs
}

var envAssign = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`) })

// wrappers are prefixes that run the rest of the line (their own flags are
// skipped).
var wrappers = map[string]bool{
	"sudo": true, "time": true, "env": true, "nice": true, "command": true, "exec": true,
	"nohup": true, "xvfb-run": true, "stdbuf": true, "caffeinate": true,
}

// runners run a tool by name: npx jest, uv run pytest, bundle exec rspec.
var runners = map[string][]string{
	"npx": nil, "pnpx": nil, "bunx": nil,
	"uv": {"run"}, "poetry": {"run"}, "pipenv": {"run"}, "hatch": {"run"}, "pdm": {"run"}, "rye": {"run"},
	"bundle": {"exec"}, "pnpm": {"exec", "dlx"}, "yarn": {"exec", "dlx"}, "npm": {"exec"},
}

// segmentIsTest recognises one simple command; decisive is false for a
// nested sh -c whose own status is masked.
func segmentIsTest(seg string) (recognised, decisive bool) {
	f := strings.Fields(strings.TrimLeft(seg, "({! "))
	for len(f) > 0 {
		w := f[0]
		switch {
		case envAssign().MatchString(w):
			f = f[1:]
			continue
		case wrappers[w]:
			f = f[1:]
			for len(f) > 0 && strings.HasPrefix(f[0], "-") {
				f = f[1:]
			}
			continue
		case w == "timeout":
			f = f[1:]
			for len(f) > 0 && strings.HasPrefix(f[0], "-") {
				if (f[0] == "-s" || f[0] == "-k" || f[0] == "--signal" || f[0] == "--kill-after") && len(f) > 1 {
					f = f[1:] // the flag's value
				}
				f = f[1:]
			}
			if len(f) > 0 {
				f = f[1:] // the duration
			}
			continue
		case (w == "bash" || w == "sh" || w == "zsh") && len(f) > 2 && strings.HasPrefix(f[1], "-") && strings.HasSuffix(f[1], "c"):
			inner := strings.Join(f[2:], " ")
			return testCommand(unquote(inner))
		}
		if subs, ok := runners[w]; ok {
			if subs == nil {
				f = f[1:]
				for len(f) > 0 && strings.HasPrefix(f[0], "-") {
					f = f[1:]
				}
				continue
			}
			if len(f) > 1 && contains(subs, f[1]) {
				f = f[2:]
				continue
			}
		}
		break
	}
	if len(f) == 0 {
		return false, false
	}
	prog := strings.ToLower(path.Base(strings.Trim(f[0], `"'`)))
	args := f[1:]
	return isTestProgram(prog, args), true
}

func unquote(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// firstArg is the first argument that is not a flag (nor a +toolchain).
func firstArg(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "+") {
			return a
		}
	}
	return ""
}

func anyArg(args []string, ok func(string) bool) bool {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") && ok(a) {
			return true
		}
	}
	return false
}

func isTestProgram(prog string, args []string) bool {
	sub := firstArg(args)
	switch prog {
	case "go":
		return sub == "test" || sub == "build" || sub == "vet"
	case "cargo":
		return sub == "test" || sub == "build" || sub == "check" || sub == "nextest" || sub == "t" || sub == "b"
	case "pytest", "py.test", "tox", "nox", "tsc", "jest", "vitest", "mocha", "ava", "karma", "phpunit",
		"rspec", "ctest", "ninja", "gotestsum", "unittest", "nosetests":
		return true
	case "npm", "pnpm", "yarn", "bun":
		switch {
		case sub == "test" || sub == "t" || sub == "tst" || strings.HasPrefix(sub, "test:"):
			return true
		case sub == "build" && prog != "npm":
			return true
		case sub == "run" || sub == "run-script":
			return scriptIsTest(firstArg(args[indexOf(args, sub)+1:]))
		case prog == "yarn" || prog == "pnpm":
			return scriptIsTest(sub)
		}
		return false
	case "deno", "swift", "mix", "dotnet", "stack", "cabal", "zig":
		return sub == "test" || sub == "build"
	case "bazel", "bazelisk", "buck", "buck2", "pants":
		return sub == "test" || sub == "build"
	case "playwright":
		return sub == "test"
	case "rake":
		return sub == "" || sub == "test" || sub == "spec"
	case "cmake":
		return contains(args, "--build")
	case "make", "gmake":
		targets := makeTargets(args)
		if len(targets) == 0 {
			return true
		}
		for _, t := range targets {
			if scriptIsTest(t) || t == "all" || t == "ci" || t == "verify" {
				return true
			}
		}
		return false
	case "mvn", "mvnw":
		return anyArg(args, func(a string) bool {
			a = a[strings.LastIndex(a, ":")+1:]
			return a == "test" || a == "verify" || a == "package" || a == "install" || a == "compile"
		})
	case "gradle", "gradlew":
		return anyArg(args, func(a string) bool {
			a = a[strings.LastIndex(a, ":")+1:]
			return a == "test" || a == "build" || a == "check" || a == "assemble"
		})
	}
	if strings.HasPrefix(prog, "python") || prog == "py" {
		for i, a := range args {
			if a == "-m" && i+1 < len(args) {
				m := args[i+1]
				return m == "pytest" || m == "unittest" || m == "tox" || m == "nox" || m == "mypy"
			}
		}
	}
	return false
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// scriptIsTest reports whether a package.json script or make target name is
// a test, build or check.
func scriptIsTest(s string) bool {
	s = strings.ToLower(s)
	for _, p := range []string{"test", "build", "check", "typecheck", "type-check", "compile"} {
		if s == p || strings.HasPrefix(s, p+":") || strings.HasPrefix(s, p+"-") || strings.HasPrefix(s, p+"_") {
			return true
		}
	}
	return s == "tests" || s == "unit" || s == "e2e" || s == "tsc"
}

// makeTargets returns make's targets, skipping flags, their values and
// VAR=value assignments.
func makeTargets(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-C" || a == "-f" || a == "-j" && i+1 < len(args) && isNumber(args[i+1]) || a == "-I" || a == "-o" || a == "-W":
			i++
		case strings.HasPrefix(a, "-"), envAssign().MatchString(a):
		default:
			out = append(out, a)
		}
	}
	return out
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
