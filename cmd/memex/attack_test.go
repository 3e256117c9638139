package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/internal/redistest"
	"github.com/memex-dev/memex/internal/secretcorpus"
	"github.com/memex-dev/memex/plugins/embedded"
	redisstore "github.com/memex-dev/memex/plugins/redis"
	"github.com/memex-dev/memex/service"
)

// survivors names the corpus secrets found in text.
func survivors(text string) []string {
	var out []string
	for _, s := range secretcorpus.Secrets() {
		for _, n := range s.Needles() {
			if strings.Contains(text, n) {
				out = append(out, s.Kind)
				break
			}
		}
	}
	return out
}

// TestAttackSecretCorpusCLI runs every kind of the corpus through the CLI
// write paths (qa add: question, answer, summary, tags; qa import: minimal
// and full lines) on the embedded store: no secret survives in the records
// (decoded by qa export), the store file, stdout or stderr; every
// near-miss survives untouched.
func TestAttackSecretCorpusCLI(t *testing.T) {
	c := newCLI(t)
	var outs bytes.Buffer
	secrets := secretcorpus.Secrets()
	if len(secrets) < 50 {
		t.Fatalf("corpus has %d kinds, want ≥ 50", len(secrets))
	}
	var lines strings.Builder
	for i, s := range secrets {
		code, out, errOut := c.run("", "qa", "add", "--question", "how do I use "+s.Kind+"? "+s.Text, "--answer", "set it: "+s.Text,
			"--summary", s.Text, "--tags", "ci")
		outs.WriteString(out + errOut)
		if code != 0 && !strings.Contains(errOut, "tags") {
			t.Fatalf("qa add %s: exit %d: %s", s.Kind, code, errOut)
		}
		min1, _ := json.Marshal(map[string]any{"question": "imported " + s.Kind + " " + s.Text, "answer": s.Text})
		full, _ := json.Marshal(core.Record{QAID: fmt.Sprintf("qa_full_%d", i), ProjectID: "test", Question: "full " + s.Kind, Answer: s.Text,
			Summary: s.Text, Tags: []string{"x"}, Metadata: map[string]any{"note": s.Text}, Status: core.StatusCandidate,
			CreatedAt: time.Now().UTC(), UpdatedAt: time.Now().UTC()})
		lines.Write(min1)
		lines.WriteString("\n")
		lines.Write(full)
		lines.WriteString("\n")
	}
	f := filepath.Join(c.dir, "import.jsonl")
	if err := os.WriteFile(f, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := c.run("", "qa", "import", f)
	outs.WriteString(out + errOut)
	if code != 0 {
		t.Fatalf("qa import: exit %d: %s", code, errOut)
	}
	for _, near := range secretcorpus.NearMisses() {
		c.mustRun("", "qa", "add", "--question", "near miss: "+near, "--answer", near)
	}
	export := c.mustRun("", "qa", "export")
	if n := strings.Count(export, "\n"); n < 3*len(secrets) {
		t.Fatalf("export holds %d records, want ≥ %d", n, 3*len(secrets))
	}
	if s := survivors(export); len(s) > 0 {
		t.Errorf("secrets survived in the stored records: %v", s)
	}
	var decoded strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(export), "\n") {
		var r core.Record
		if err := json.Unmarshal([]byte(line), &r); err == nil {
			decoded.WriteString(r.Question + "\n" + r.Answer + "\n")
		}
	}
	for _, near := range secretcorpus.NearMisses() {
		if !strings.Contains(decoded.String(), near) {
			t.Errorf("near-miss changed: %q", near)
		}
	}
	if s := survivors(storeFileText(t, c.store)); len(s) > 0 {
		t.Errorf("secrets survived in the store file: %v", s)
	}
	if s := survivors(outs.String()); len(s) > 0 {
		t.Errorf("secrets echoed on stdout/stderr: %v", s)
	}
}

// TestAttackSecretCorpusRun runs every kind of the corpus through `memex
// run`: the agent prints each (and every near-miss) during a passing run
// whose query holds one too, with --events. No secret survives in the
// events file, the stored records (qa export), the store file (through its
// codec) or memex's stdout/stderr; every near-miss reaches the events file
// untouched.
func TestAttackSecretCorpusRun(t *testing.T) {
	c := newCLI(t)
	secrets := secretcorpus.Secrets()
	var out strings.Builder
	out.WriteString("Here is how to configure the deploy credentials:\n")
	for _, s := range secrets {
		out.WriteString("for " + s.Kind + ": " + s.Text + "\n")
	}
	for _, near := range secretcorpus.NearMisses() {
		out.WriteString(near + "\n")
	}
	printed := filepath.Join(c.dir, "agent-output.txt")
	script := filepath.Join(c.dir, "leaky.sh")
	if err := os.WriteFile(printed, []byte(out.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\ncat '"+printed+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	events := filepath.Join(c.dir, "events.jsonl")
	code, stdout, stderr := c.run("", "run", "--events", events, "--verify", "true", "--backend", script,
		"How do I configure the deploy credentials for the payment service with "+secrets[0].Text+"?")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, secrets[1].Secret) {
		t.Fatalf("the agent did not print the corpus (test setup): %.200q", stdout)
	}
	ev, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	evText := jsonText(ev)
	if s := survivors(evText); len(s) > 0 {
		t.Errorf("secrets survived in the events file: %v", s)
	}
	for _, near := range secretcorpus.NearMisses() {
		if !strings.Contains(evText, near) {
			t.Errorf("near-miss changed in the events file: %q", near)
		}
	}
	export := c.mustRun("", "qa", "export")
	if !strings.Contains(export, "[REDACTED:") {
		t.Fatalf("no candidate with redactions was stored (test setup): %.300q", export)
	}
	if s := survivors(jsonText([]byte(export))); len(s) > 0 {
		t.Errorf("secrets survived in the stored records: %v", s)
	}
	if s := survivors(storeFileText(t, c.store)); len(s) > 0 {
		t.Errorf("secrets survived in the store file: %v", s)
	}
	if s := survivors(stderr); len(s) > 0 {
		t.Errorf("secrets in memex's diagnostics (stderr): %v", s)
	}
}

// TestAttackSecretCorpusServeRedisAOF runs the corpus through memex serve's
// HTTP write paths (candidates with question, answer, summary, tags and
// metadata; validations with context, payload, client and source; hits
// with context and message ids; admin edits; /v1/store
// puts, read back by list and search) over a
// private Redis with appendonly: nothing survives in Redis, its AOF, the
// answers, the errors or the log.
func TestAttackSecretCorpusServeRedisAOF(t *testing.T) {
	srv := redistest.StartServer(t, redistest.ServerOptions{AOF: true, AppendFsync: "always"})
	st, err := redisstore.Open(t.Context(), srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	cfg := service.DefaultConfig()
	cfg.InsecureLocal, cfg.RequireReceipts, cfg.ExpiryInterval = true, false, -1
	var logs bytes.Buffer
	api, err := service.New(withRedaction(st, DefaultConfig()), cfg, service.WithLogger(slogTo(&logs)))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(api)
	defer ts.Close()
	var answers bytes.Buffer
	post := func(method, path string, body any) []byte {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(context.Background(), method, ts.URL+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out bytes.Buffer
		_, _ = out.ReadFrom(res.Body)
		answers.Write(out.Bytes())
		return out.Bytes()
	}
	for _, s := range secretcorpus.Secrets() {
		raw := post("POST", "/v1/qa/candidates", map[string]any{"project_id": "atk", "question": "how do I use " + s.Kind + "? " + s.Text,
			"answer": "set " + s.Text, "summary": s.Text, "tags": []string{"ci"}, "metadata": map[string]any{"cmd": s.Text, s.Text: 1}})
		var res core.CandidateResult
		if json.Unmarshal(raw, &res) != nil || res.QAID == "" {
			t.Fatalf("candidate %s: %s", s.Kind, raw)
		}
		post("POST", "/v1/qa/validate", map[string]any{"project_id": "atk", "qa_id": res.QAID, "result": "pass",
			"context": map[string]any{"log": s.Text, s.Text: []any{s.Text}}, "payload": map[string]any{"out": s.Text},
			"client": s.Text, "source": s.Text, "run_id": "run " + s.Text})
		hit := post("POST", "/v1/qa/hit", map[string]any{"project_id": "atk", "run_id": "run " + s.Text,
			"references": []map[string]any{{"qa_id": res.QAID, "used": true, "context": "used it: " + s.Text, "message_id": "m " + s.Text}}})
		if !bytes.Contains(hit, []byte(`"updated":1`)) {
			t.Fatalf("hit %s: %s", s.Kind, hit)
		}
		post("PATCH", "/admin/v1/qa/"+res.QAID, map[string]any{"project_id": "atk", "summary": "edited " + s.Text, "tags": []string{"x"}})
		post("POST", "/v1/qa/candidates", map[string]any{"project_id": "atk", "question": s.Text}) // invalid: no answer
		// The namespaced store: every string of a value (object keys and
		// nested ones too) through the same redaction as a QA.
		put := post("PUT", "/v1/store/items", map[string]any{"namespace": []string{"project", "atk"}, "key": "note-" + s.Kind,
			"value": map[string]any{"text": "uses " + s.Text, "nested": map[string]any{"cmd": []any{"run", s.Text}}, s.Text: true}})
		if !bytes.Contains(put, []byte(`"item"`)) {
			t.Fatalf("store put %s: %s", s.Kind, put)
		}
		// A secret in a name is refused (or the name is invalid anyway):
		// redacting it would rename the item.
		for _, at := range []struct{ ns, key string }{{"atk", "k " + s.Text}, {"atk " + s.Text, "k"}} {
			if len(at.key) > core.MaxItemKeyBytes || len(at.ns) > core.MaxSegmentBytes {
				continue
			}
			put = post("PUT", "/v1/store/items", map[string]any{"namespace": []string{"project", at.ns}, "key": at.key, "value": map[string]any{"text": "x"}})
			if !bytes.Contains(put, []byte(`"secret_detected"`)) && !bytes.Contains(put, []byte(`"invalid_request"`)) {
				t.Errorf("store put with a secret in its name (%s): %s", s.Kind, put)
			}
		}
	}
	post("GET", "/v1/store/list?prefix=project/atk&limit=100", nil)
	post("POST", "/v1/store/search", map[string]any{"prefix": []string{"project", "atk"}, "query": "uses", "limit": 100})
	post("POST", "/v1/qa/search", map[string]any{"project_id": "atk", "query": "how do I use", "limit": 50})
	if _, err := srv.Cli("BGREWRITEAOF"); err != nil {
		t.Logf("BGREWRITEAOF: %v", err)
	}
	// Read the files once the rewrite is done (the rewritten AOF is checked
	// too), however long it takes on this machine.
	for deadline := time.Now().Add(30 * time.Second); ; {
		info, err := srv.Cli("INFO", "persistence")
		if err == nil && strings.Contains(info, "aof_rewrite_in_progress:0") && strings.Contains(info, "aof_rewrite_scheduled:0") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the AOF rewrite did not finish in 30 s: %v\n%s", err, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var aof bytes.Buffer
	_ = filepath.WalkDir(srv.Dir(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			aof.Write(b)
		}
		return nil
	})
	if aof.Len() == 0 {
		t.Fatal("the AOF is empty: the test saw nothing")
	}
	if s := survivors(aof.String()); len(s) > 0 {
		t.Errorf("secrets survived in Redis's files (AOF): %v", s)
	}
	if s := survivors(answers.String()); len(s) > 0 {
		t.Errorf("secrets in answers or errors: %v", s)
	}
	if s := survivors(logs.String()); len(s) > 0 {
		t.Errorf("secrets in the log: %v", s)
	}
}

// storeFileText is everything the embedded store's directory holds, as
// text a secret cannot hide in: the raw files, then every key and value of
// the store read back through its own codec (records may be compressed),
// then every JSON string in those unquoted, all also in lower case (the
// index keeps lower-cased terms).
func storeFileText(t *testing.T, path string) string {
	t.Helper()
	var b strings.Builder
	_ = filepath.WalkDir(filepath.Dir(path), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			raw, _ := os.ReadFile(p)
			b.Write(raw)
		}
		return nil
	})
	st, err := embedded.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var values int
	err = st.Dump(t.Context(), func(bucket string, k, v []byte) error {
		values++
		b.WriteString("\n" + bucket + " ")
		b.Write(k)
		b.WriteByte(' ')
		b.Write(v)
		return nil
	})
	if err != nil || values == 0 {
		t.Fatalf("dump of %s: %d values, %v", path, values, err)
	}
	text := jsonText([]byte(b.String()))
	return text + "\n" + strings.ToLower(text)
}

// jsonText is b followed by every JSON string in it unquoted (a secret
// with a quote, a backslash or a newline is escaped in JSON).
func jsonText(b []byte) string {
	var out strings.Builder
	out.Write(b)
	for _, q := range jsonStringRE.FindAll(b, -1) {
		var u string
		if json.Unmarshal(q, &u) == nil {
			out.WriteString("\n" + u)
		}
	}
	return out.String()
}

// jsonStringRE matches what may be a JSON string: quotes around
// characters other than a quote, a backslash or a control character (which
// JSON escapes), or escapes. A quote in binary data (a store file's page
// headers) ends its match at the next control character, never scanning
// the megabytes of zeros after it.
var jsonStringRE = regexp.MustCompile(`"(?:[^"\\\x00-\x1f]|\\.)*"`)

// TestAttackStoreFileCheckSeesCompressedRecords proves storeFileText can
// fail: a secret written past redaction into a record the store compresses
// is not in the file's raw bytes but is found through the store's codec.
func TestAttackStoreFileCheckSeesCompressedRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memex.db")
	st, err := embedded.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s := secretcorpus.Secrets()[0]
	long := strings.Repeat("run the build again and check the output of go test. ", 20)
	if _, err := st.RecordCandidate(t.Context(), core.CandidateRequest{ProjectID: "p", Question: "how do I deploy the app",
		Answer: long + "Xy" + s.Secret + "Zq " + long}); err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	raw, _ := os.ReadFile(path)
	if strings.Contains(string(raw), s.Secret) {
		t.Fatal("the record is not compressed: this test proves nothing")
	}
	if got := survivors(storeFileText(t, path)); !slices.Contains(got, s.Kind) {
		t.Fatalf("a secret stored compressed was not found: %v", got)
	}
}

func slogTo(w *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(&lockedWriter{w: w}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
