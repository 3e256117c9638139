package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/memex-dev/memex/hooks"
)

// TestPluginManifests checks the Claude Code plugin, the Codex plugin and
// the Gemini CLI extension shipped in the repository: each parses, every
// hook command is `memex hook <host> <event>` for an event memex handles
// (the ones install registers), and every MCP server runs `memex mcp`.
func TestPluginManifests(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	read := func(rel string, v any) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
	}
	var claudeMarket struct {
		Name    string `json:"name"`
		Plugins []struct {
			Name   string `json:"name"`
			Source string `json:"source"`
		} `json:"plugins"`
	}
	read(".claude-plugin/marketplace.json", &claudeMarket)
	if len(claudeMarket.Plugins) != 1 || claudeMarket.Plugins[0].Source != "./integrations/claude" {
		t.Errorf("claude marketplace: %+v", claudeMarket)
	}
	var codexMarket struct {
		Plugins []struct {
			Source struct {
				Path string `json:"path"`
			} `json:"source"`
		} `json:"plugins"`
	}
	read(".agents/plugins/marketplace.json", &codexMarket)
	if len(codexMarket.Plugins) != 1 || codexMarket.Plugins[0].Source.Path != "./integrations/codex" {
		t.Errorf("codex marketplace: %+v", codexMarket)
	}
	var manifest struct {
		Name       string          `json:"name"`
		Version    string          `json:"version"`
		Hooks      string          `json:"hooks"`
		MCPServers json.RawMessage `json:"mcpServers"`
	}
	for _, rel := range []string{"integrations/claude/.claude-plugin/plugin.json", "integrations/codex/.codex-plugin/plugin.json", "integrations/gemini/gemini-extension.json"} {
		manifest.Name, manifest.Version = "", ""
		read(rel, &manifest)
		if manifest.Name != "memex" || manifest.Version == "" {
			t.Errorf("%s: name %q version %q", rel, manifest.Name, manifest.Version)
		}
	}

	type mcpServers struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	for _, rel := range []string{"integrations/claude/.mcp.json", "integrations/codex/.mcp.json", "integrations/gemini/gemini-extension.json"} {
		var m mcpServers
		read(rel, &m)
		s, ok := m.MCPServers["memex"]
		if !ok || s.Command != "memex" || strings.Join(s.Args, " ") != "mcp" {
			t.Errorf("%s: mcpServers %+v; want memex: memex mcp", rel, m.MCPServers)
		}
	}

	for host, rel := range map[hooks.Host]string{
		hooks.Claude: "integrations/claude/hooks/hooks.json",
		hooks.Codex:  "integrations/codex/hooks/hooks.json",
		hooks.Gemini: "integrations/gemini/hooks/hooks.json",
	} {
		var doc struct {
			Hooks map[string][]struct {
				Hooks []struct {
					Type    string `json:"type"`
					Command string `json:"command"`
					Timeout int    `json:"timeout"`
				} `json:"hooks"`
			} `json:"hooks"`
		}
		read(rel, &doc)
		var events []string
		for event, groups := range doc.Hooks {
			for _, g := range groups {
				for _, h := range g.Hooks {
					want := "memex hook " + string(host) + " " + event
					if h.Type != "command" || h.Command != want || h.Timeout <= 0 {
						t.Errorf("%s %s: %+v; want command %q with a timeout", rel, event, h, want)
					}
					if _, err := host.EventKind(event); err != nil {
						t.Errorf("%s: %v", rel, err)
					}
					events = append(events, event)
				}
			}
		}
		if len(events) != len(host.InstalledEvents()) {
			t.Errorf("%s: events %v; want %v", rel, events, host.InstalledEvents())
		}
	}
}
