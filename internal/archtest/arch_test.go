// Package archtest enforces memex's dependency rule (docs/ARCHITECTURE.md),
// deny by default: every package in the module has an entry in rules below
// naming exactly what it may import — standard library packages included —
// and any package or import not named there fails TestDependencyRule with a
// message saying where to declare it.
//
// The rule: core imports only the standard library; the pure packages
// (trust, retrieval, evidence, gatekeeper, extract, the ledger, …) import
// core and no I/O from the standard library (no net, os, os/exec, syscall);
// plugins never import each other; only cmd/ wires everything.
package archtest

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/memex-dev/memex"

// pure is the standard library a package with no I/O may use: data
// structures, encodings, text, maths, hashing, time values and contexts.
// No os, net, os/exec, syscall, io/fs, runtime or loggers: a package that
// needs one names it in its rule.
var pure = []string{
	"bufio", "bytes", "cmp", "container/list", "context", "crypto/sha256",
	"encoding/base64", "encoding/binary", "encoding/hex", "encoding/json",
	"errors", "fmt", "hash/fnv", "io", "iter", "maps", "math", "math/bits",
	"math/rand/v2", "path", "regexp", "slices", "sort", "strconv", "strings",
	"sync", "sync/atomic", "time", "unicode", "unicode/utf8",
}

// rule is what one package may import: standard library packages (std, on
// top of pure when pure is set), packages of this module (own, relative to
// the module; "internal/*" allows every internal package), and external
// module paths (ext, each a package path or a prefix ending in "/").
type rule struct {
	why  string
	pure bool
	std  []string
	own  []string
	ext  []string
}

// anyStd marks a package that may import the whole standard library (the
// binaries in cmd/ and test-only helpers).
const anyStd = "*"

var (
	goRedis    = "github.com/redis/go-redis/v9"
	echo       = "github.com/labstack/echo/v4"
	prometheus = "github.com/prometheus/client_golang/"
	mcpSDK     = "github.com/modelcontextprotocol/go-sdk/"
	bbolt      = "go.etcd.io/bbolt"
	goCmp      = "github.com/google/go-cmp/"
)

var rules = map[string]rule{
	"core": {why: "core is the domain: the standard library only, no I/O", pure: true},
	"core/coretest": {why: "the conformance suite: core, go-cmp and testing", pure: true,
		std: []string{"testing"}, own: []string{"core"}, ext: []string{goCmp}},
	"wire":  {why: "the HTTP API's types: core only, no I/O", pure: true, std: []string{"net/url"}, own: []string{"core"}},
	"trust": {why: "the trust model is pure: core only", pure: true, own: []string{"core"}},
	"trust/ledger": {why: "the domain rules are pure: core and trust only, never a store", pure: true,
		own: []string{"core", "trust"}},
	"trust/sim": {why: "the trust simulation is pure: core and trust", pure: true, own: []string{"core", "trust"}},
	"retrieval": {why: "scoring is pure: core only", pure: true, own: []string{"core"}},
	"evidence":  {why: "the grader is pure: core only", pure: true, own: []string{"core"}},
	"gatekeeper": {why: "selection and evaluation are pure: core, evidence and the ledger's rules", pure: true,
		own: []string{"core", "evidence", "trust/ledger"}},
	"extract": {why: "extraction is pure: core, evidence and extract/redact", pure: true,
		own: []string{"core", "evidence", "extract/redact"}},
	"extract/redact": {why: "the secret rules and the redacting decorator: core only, no I/O", pure: true,
		own: []string{"core"}},
	"mdmemory": {why: "the Markdown memory format is pure and imports no memex package", pure: true},
	"evalset": {why: "the evaluation sets read their files; no memex package", pure: true,
		std: []string{"os", "path/filepath"}},
	"semantic": {why: "the embedder client calls an HTTP API; core only", pure: true,
		std: []string{"log/slog", "net/http", "net/url"}, own: []string{"core"}},
	"agent": {why: "runs the agent backend as a process; core and evidence", pure: true,
		std: []string{"os", "os/exec", "path/filepath", "syscall"}, own: []string{"core", "evidence"}},
	"engine": {why: "the loop as a library: core, gatekeeper, extract; never a store or a process", pure: true,
		std: []string{"crypto/rand", "log/slog"}, own: []string{"core", "gatekeeper", "extract", "extract/redact"}},
	"hooks": {why: "the hosts' hook protocols and transcripts: core and agent, never the engine or a store", pure: true,
		std: []string{"os", "path/filepath"}, own: []string{"core", "agent"}},
	"mcpserver": {why: "memex's MCP tools: core, engine and extract/redact, never a store", pure: true,
		std: []string{"log/slog"}, own: []string{"core", "engine", "extract/redact"}, ext: []string{mcpSDK}},
	"distill": {why: "distillation runs the agent CLI: core and extract/redact", pure: true,
		std: []string{"os", "os/exec", "path/filepath", "syscall"}, own: []string{"core", "extract/redact"}},
	"internal/atomicfile": {why: "one file primitive: no memex package", pure: true,
		std: []string{"io/fs", "os", "path/filepath"}},
	"internal/secretcorpus": {why: "the attack corpus: data only", pure: true},
	"plugins/embedded": {why: "the bbolt store: core, trust, trust/ledger, retrieval — never another plugin", pure: true,
		std: []string{"compress/flate", "crypto/rand", "log/slog", "os", "path/filepath", "syscall"},
		own: []string{"core", "trust", "trust/ledger", "retrieval"},
		ext: []string{bbolt, bbolt + "/"}},
	"plugins/redis": {why: "the Redis store: core, trust, trust/ledger, retrieval — never another plugin", pure: true,
		std: []string{"crypto/rand", "crypto/tls", "log/slog", "net", "syscall"},
		own: []string{"core", "trust", "trust/ledger", "retrieval"}, ext: []string{goRedis}},
	"plugins/inmem": {why: "the in-memory item store: core and retrieval", pure: true, own: []string{"core", "retrieval"}},
	"plugins/http": {why: "the client of memex serve: core, wire and the ledger's rules", pure: true,
		std: []string{"crypto/rand", "log/slog", "net", "net/http", "net/url", "os", "path/filepath", "syscall"},
		own: []string{"core", "wire", "trust/ledger"}},
	"service": {why: "memex serve's API over any store: core, wire and the ledger's rules, echo and Prometheus", pure: true,
		std: []string{"crypto/rand", "crypto/subtle", "embed", "log/slog", "net", "net/http"},
		own: []string{"core", "wire", "trust/ledger"}, ext: []string{echo, prometheus}},
	"ui": {why: "the dashboard over the API it is mounted beside: core and wire", pure: true,
		std: []string{"crypto/hmac", "crypto/rand", "embed", "html/template", "io/fs", "log/slog", "net/http", "net/url"},
		own: []string{"core", "wire"}},
	"internal/redistest": {why: "Redis test helpers: private servers and the shared one", std: []string{anyStd},
		ext: []string{goRedis}},
	"internal/archtest":  {why: "this test", std: []string{anyStd}},
	"internal/decorated": {why: "tests only (the decorated conformance suite)"},
	"cmd/memex": {why: "the CLI wires everything", std: []string{anyStd}, own: []string{"*"},
		ext: []string{"github.com/BurntSushi/toml", goRedis, mcpSDK, "golang.org/x/term"}},
	"cmd/memex-bench": {why: "the benchmark binary", std: []string{anyStd},
		own: []string{"core", "evalset", "plugins/embedded", "plugins/redis", "retrieval", "service", "ui"}, ext: []string{echo, goRedis}},
	"cmd/memex-trustsim": {why: "the trust simulation binary", std: []string{anyStd}, own: []string{"trust/sim"}},
}

type pkg struct {
	ImportPath string
	Imports    []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-e", "-json=ImportPath,Imports", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []pkg
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func rel(path string) string { return strings.TrimPrefix(strings.TrimPrefix(path, module), "/") }

func matches(list []string, path string) bool {
	for _, a := range list {
		if a == "*" || a == path || (strings.HasSuffix(a, "/") && strings.HasPrefix(path, a)) {
			return true
		}
		if strings.HasSuffix(a, "/*") && strings.HasPrefix(path, strings.TrimSuffix(a, "*")) {
			return true
		}
	}
	return false
}

// allowed returns nil when package p (relative to the module) may import
// imp, or an error saying why not and where to declare it.
func allowed(p, imp string) error {
	r, ok := rules[p]
	if !ok {
		return fmt.Errorf("package %s has no rule: declare what it may import in rules in internal/archtest/arch_test.go (and its row in docs/ARCHITECTURE.md)", p)
	}
	switch {
	case strings.HasPrefix(imp, module+"/") || imp == module:
		if matches(r.own, rel(imp)) {
			return nil
		}
	case isStd(imp):
		if (r.pure && slices.Contains(pure, imp)) || matches(r.std, imp) {
			return nil
		}
	default:
		if matches(r.ext, imp) {
			return nil
		}
	}
	return fmt.Errorf("%s may not import %s (%s); if it should, add it to rules[%q] in internal/archtest/arch_test.go and docs/ARCHITECTURE.md", p, imp, r.why, p)
}

func TestDependencyRule(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range listPackages(t) {
		name := rel(p.ImportPath)
		seen[name] = true
		if _, ok := rules[name]; !ok {
			t.Error(allowed(name, "fmt"))
			continue
		}
		for _, imp := range p.Imports {
			if err := allowed(name, imp); err != nil {
				t.Error(err)
			}
		}
	}
	for name := range rules {
		if !seen[name] {
			t.Errorf("rules[%q] names a package that does not exist: remove it from internal/archtest/arch_test.go", name)
		}
	}
}

func TestRuleRejectsViolations(t *testing.T) {
	bad := [][2]string{
		{"core", goRedis},
		{"core", module + "/trust"},
		{"core", "net/http"},
		{"core", "os"},
		{"gatekeeper", module + "/extract"},
		{"gatekeeper", "net/http"},
		{"gatekeeper", "os/exec"},
		{"trust", "os"},
		{"trust/ledger", "net"},
		{"retrieval", "os/exec"},
		{"evidence", module + "/gatekeeper"},
		{"evidence", module + "/agent"},
		{"extract", module + "/plugins/embedded"},
		{"extract", "os"},
		{"engine", "os/exec"},
		{"engine", module + "/agent"},
		{"plugins/embedded", module + "/plugins/redis"},
		{"plugins/embedded", goRedis},
		{"plugins/embedded", "os/exec"},
		{"plugins/inmem", module + "/plugins/embedded"},
		{"plugins/embedded", module + "/gatekeeper"},
		{"plugins/redis", "net/http"},
		{"engine", module + "/plugins/embedded"},
		{"trust", module + "/retrieval"},
		{"trust/ledger", module + "/plugins/embedded"},
		{"trust/ledger", module + "/retrieval"},
		{"service", module + "/plugins/embedded"},
		{"service", module + "/gatekeeper"},
		{"service", "os/exec"},
		{"mdmemory", module + "/core"},
		{"hooks", module + "/engine"},
		{"hooks", module + "/plugins/embedded"},
		{"hooks", "os/exec"},
		{"wire", module + "/plugins/http"},
		{"wire", echo},
		{"wire", "net/http"},
		{"distill", module + "/agent"},
		{"distill", module + "/plugins/embedded"},
		{"ui", module + "/service"},
		{"ui", module + "/plugins/embedded"},
		{"ui", "os/exec"},
		{"mcpserver", module + "/plugins/embedded"},
		{"cmd/memex", "github.com/samber/lo"},
		{"newpackage", "fmt"},
	}
	for _, b := range bad {
		if err := allowed(b[0], b[1]); err == nil {
			t.Errorf("rule allows %s → %s", b[0], b[1])
		} else if !strings.Contains(err.Error(), "internal/archtest/arch_test.go") {
			t.Errorf("%s → %s: the refusal does not say where to declare it: %v", b[0], b[1], err)
		}
	}
	good := [][2]string{
		{"core", "encoding/json"},
		{"plugins/redis", goRedis},
		{"plugins/embedded", bbolt + "/errors"},
		{"service", prometheus + "prometheus/promhttp"},
		{"cmd/memex", module + "/plugins/redis"},
		{"cmd/memex", "os/exec"},
	}
	for _, g := range good {
		if err := allowed(g[0], g[1]); err != nil {
			t.Errorf("rule refuses %s → %s: %v", g[0], g[1], err)
		}
	}
}
