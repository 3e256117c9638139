package redact

import (
	"fmt"
	"strings"
	"testing"
)

// transcript builds about size bytes of agent-transcript-like text (JSONL
// events: prose, code, commands, test output), with secrets mixed in when
// withSecrets.
func transcript(size int, withSecrets bool) string {
	lines := []string{
		`{"kind":"text","text":"I'll look at the failing test first and then fix the handler."}`,
		`{"kind":"tool_call","tool":"Bash","command":"go test ./internal/server/... -run TestHandler -count=1"}`,
		`{"kind":"tool_result","exit_code":0,"text":"ok  \tgithub.com/acme/app/internal/server\t0.412s"}`,
		`{"kind":"tool_call","tool":"Read","args":"{\"file_path\":\"/repo/internal/server/handler.go\"}"}`,
		`{"kind":"tool_result","text":"func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {\n\tctx := r.Context()\n\tkey := chi.URLParam(r, \"key\")\n\tv, err := h.store.Get(ctx, key)\n\tif err != nil {\n\t\thttp.Error(w, err.Error(), http.StatusNotFound)\n\t\treturn\n\t}\n\tjson.NewEncoder(w).Encode(v)\n}"}`,
		`{"kind":"text","text":"The handler returns 404 for a missing key; the test expected 204. I'll change the status and add a case for the empty key."}`,
		`{"kind":"tool_call","tool":"Edit","args":"{\"file_path\":\"handler.go\",\"old_string\":\"http.StatusNotFound\",\"new_string\":\"http.StatusNoContent\"}"}`,
		`{"kind":"tool_result","text":"The file handler.go has been updated."}`,
		`{"kind":"reasoning","text":"The session middleware reads the auth header and checks the token expiry before calling the handler."}`,
		`{"kind":"tool_call","tool":"Bash","command":"npm run build && npm test -- --coverage"}`,
		`{"kind":"tool_result","exit_code":0,"text":"PASS src/components/LoginForm.test.tsx\n  ✓ renders the password field (34 ms)\n  ✓ submits the form (51 ms)\nTests: 2 passed, 2 total"}`,
		`{"kind":"text","text":"Build and tests pass. The password field now uses the shared Input component, and max_tokens is read from config."}`,
	}
	secrets := []string{
		`{"kind":"tool_result","exit_code":0,"text":"OPENAI_API_KEY=sk-proj-` + fake(b64url, 80, 1001) + `\nDB_PASSWORD=` + fake(alnum, 14, 1002) + `"}`,
		`{"kind":"tool_call","tool":"Bash","command":"git remote set-url origin https://x:ghp_` + fake(alnum, 36, 1003) + `@github.com/acme/app.git"}`,
		`{"kind":"tool_result","text":"-----BEGIN RSA PRIVATE KEY-----\n` + fake(b64, 64, 1004) + `\n` + fake(b64, 64, 1005) + `\n-----END RSA PRIVATE KEY-----"}`,
	}
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		b.WriteString(lines[i%len(lines)])
		b.WriteByte('\n')
		if withSecrets && i%40 == 39 {
			b.WriteString(secrets[(i/40)%len(secrets)])
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func BenchmarkRedact(b *testing.B) {
	r := New()
	for _, tc := range []struct {
		name    string
		secrets bool
	}{{"clean", false}, {"secrets", true}} {
		s := transcript(100<<10, tc.secrets)
		b.Run(fmt.Sprintf("%s/100KiB", tc.name), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				r.Redact(s)
			}
		})
	}
}

func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		New()
	}
}

func TestTranscriptFixture(t *testing.T) {
	r := New()
	if fs := r.Find(transcript(100<<10, false)); len(fs) != 0 {
		t.Errorf("clean transcript has %d findings, first %s", len(fs), fs[0].Rule)
	}
	out, fs := r.Redact(transcript(100<<10, true))
	if len(fs) == 0 || strings.Contains(out, "ghp_") || strings.Contains(out, "BEGIN RSA") {
		t.Errorf("secret transcript: %d findings", len(fs))
	}
}
