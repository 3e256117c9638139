// Package archtest enforces memex's dependency rule (docs/ARCHITECTURE.md):
// core imports only the standard library; the pure packages import only core;
// plugins never import each other; only cmd/memex wires everything.
package archtest

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/memex-dev/memex"

type pkg struct {
	ImportPath string
	Imports    []string
	Standard   bool
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,Standard", module+"/...").Output()
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

// allowed returns whether package p (relative path) may import imp.
func allowed(p, imp string) (bool, string) {
	if isStd(imp) {
		return true, ""
	}
	own := strings.HasPrefix(imp, module)
	r := rel(imp)
	external := map[string]bool{"github.com/samber/lo": true}
	switch {
	case p == "core":
		return false, "core imports only the standard library"
	case p == "core/coretest":
		return (own && r == "core") || (!own && strings.HasPrefix(imp, "github.com/google/go-cmp/")), "coretest imports only core (and go-cmp)"
	case p == "trust" || p == "retrieval" || p == "extract/redact" || p == "evidence":
		return (own && r == "core") || external[imp], p + " imports only core"
	case p == "gatekeeper" || p == "agent":
		return (own && (r == "core" || r == "evidence")) || external[imp], p + " imports only core and evidence"
	case p == "extract":
		return (own && (r == "core" || r == "extract/redact" || r == "evidence")) || external[imp], "extract imports only core, evidence and extract/redact"
	case p == "wire":
		return own && r == "core", "wire imports only core"
	case strings.HasPrefix(p, "plugins/"):
		if own {
			return r == "core" || r == "wire" || r == "trust" || r == "trust/ledger" || r == "retrieval" || r == "extract/redact" || strings.HasPrefix(r, p+"/") || strings.HasPrefix(r, "internal/"),
				"plugins import core, wire, trust, retrieval — never another plugin, gatekeeper, extract or engine"
		}
		return true, ""
	case p == "service":
		return !own || r == "core" || r == "wire", "service imports only core and wire (it serves any core.MemoryPlugin)"
	case p == "distill":
		return !own || r == "core" || r == "extract/redact", "distill imports only core and extract/redact (cmd/memex wires it)"
	case p == "mdmemory" || p == "internal/atomicfile":
		return !own, p + " imports no memex package (pure format / one file primitive)"
	case p == "ui":
		return !own || r == "core" || r == "wire", "ui imports only core and wire (it reads and acts through the API it is mounted beside)"
	case p == "evalset":
		return !own, "evalset imports no memex package"
	case p == "semantic":
		return !own || r == "core", "semantic imports only core"
	case p == "trust/ledger":
		return (own && (r == "core" || r == "trust")) || external[imp], "trust/ledger imports only core and trust"
	case p == "trust/sim":
		return !own || r == "core" || r == "trust", "trust/sim imports only core and trust"
	case p == "hooks":
		return !own || r == "core" || r == "agent",
			"hooks (the hosts' hook protocols, transcripts and settings) imports core and agent, never the engine or a store"
	case p == "mcpserver":
		return !own || r == "core" || r == "engine" || r == "extract/redact",
			"mcpserver (memex's MCP tools) imports core, engine and extract/redact, never a store"
	case p == "engine":
		return !own || r == "core" || r == "gatekeeper" || r == "extract" || r == "extract/redact" || r == "agent" || r == "evidence",
			"engine imports core, gatekeeper, extract and agent, never a plugin"
	}
	if own && strings.HasPrefix(r, "plugins/") && !strings.HasPrefix(p, "cmd/") && !strings.HasPrefix(p, "internal/") && !strings.HasPrefix(p, "service") {
		return false, "only cmd/ wires plugins"
	}
	return true, ""
}

func TestDependencyRule(t *testing.T) {
	for _, p := range listPackages(t) {
		name := rel(p.ImportPath)
		for _, imp := range p.Imports {
			if ok, why := allowed(name, imp); !ok {
				t.Errorf("%s imports %s: %s", name, imp, why)
			}
		}
	}
}

func TestRuleRejectsViolations(t *testing.T) {
	bad := [][2]string{
		{"core", "github.com/redis/go-redis/v9"},
		{"core", module + "/trust"},
		{"gatekeeper", module + "/extract"},
		{"evidence", module + "/gatekeeper"},
		{"evidence", module + "/agent"},
		{"extract", module + "/plugins/embedded"},
		{"plugins/embedded", module + "/plugins/redis"},
		{"plugins/inmem", module + "/plugins/embedded"},
		{"plugins/embedded", module + "/gatekeeper"},
		{"engine", module + "/plugins/embedded"},
		{"trust", module + "/retrieval"},
		{"trust/ledger", module + "/plugins/embedded"},
		{"trust/ledger", module + "/retrieval"},
		{"service", module + "/plugins/embedded"},
		{"service", module + "/gatekeeper"},
		{"mdmemory", module + "/core"},
		{"hooks", module + "/engine"},
		{"hooks", module + "/plugins/embedded"},
		{"wire", module + "/plugins/http"},
		{"wire", "github.com/labstack/echo/v4"},
		{"distill", module + "/agent"},
		{"distill", module + "/plugins/embedded"},
		{"ui", module + "/service"},
		{"ui", module + "/plugins/embedded"},
	}
	for _, b := range bad {
		if ok, _ := allowed(b[0], b[1]); ok {
			t.Errorf("rule allows %s → %s", b[0], b[1])
		}
	}
}
