package ui

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/memex-dev/memex/core"
)

var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05")
	},
	"trust": func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"pct":   func(v float64) string { return fmt.Sprintf("%.0f %%", 100*v) },
	"join":  func(ss []string) string { return strings.Join(ss, ", ") },
	"qaURL": qaURL,
	"projectURL": func(p string) string {
		return Prefix + "p/" + url.PathEscape(p)
	},
	"prefix": func() string { return Prefix },
	// dict passes a project, records and a table id to "qatable".
	"dict": func(p string, recs []core.Record, id string) map[string]any {
		return map[string]any{"p": p, "recs": recs, "id": id}
	},
	"statuses": func() []core.Status { return statusOrder },
	"kv": func(m map[string]any) string {
		if len(m) == 0 {
			return ""
		}
		var b strings.Builder
		for _, k := range sortedKeys(m) {
			if b.Len() > 0 {
				b.WriteString(" · ")
			}
			fmt.Fprintf(&b, "%s %v", k, m[k])
		}
		return b.String()
	},
}

// parseTemplates parses every page with the layout.
func parseTemplates() (map[string]*template.Template, error) {
	layout, err := fs.ReadFile(assets, "assets/layout.html")
	if err != nil {
		return nil, err
	}
	partials, err := fs.ReadFile(assets, "assets/partials.html")
	if err != nil {
		return nil, err
	}
	pages, err := fs.Glob(assets, "assets/pages/*.html")
	if err != nil {
		return nil, err
	}
	out := map[string]*template.Template{}
	for _, p := range pages {
		body, err := fs.ReadFile(assets, p)
		if err != nil {
			return nil, err
		}
		name := strings.TrimSuffix(path.Base(p), ".html")
		t, err := template.New("layout").Funcs(funcs).Parse(string(layout))
		if err != nil {
			return nil, fmt.Errorf("ui: layout: %w", err)
		}
		if _, err := t.Parse(string(partials)); err != nil {
			return nil, fmt.Errorf("ui: partials: %w", err)
		}
		if _, err := t.Parse(string(body)); err != nil {
			return nil, fmt.Errorf("ui: %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// render executes a page into a buffer first, so a template error is a
// clean 500 and never half a page.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, code int, name string, p page) {
	var b bytes.Buffer
	t := h.tmpl[name]
	if t == nil {
		h.log.Error("dashboard: no template", "op", "ui", "template", name)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	if err := t.ExecuteTemplate(&b, "layout", p); err != nil {
		h.log.Error("dashboard: template failed", "op", "ui", "template", name, "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b.Bytes())
	}
}
