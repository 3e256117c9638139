package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeEmbeddings is an OpenAI-compatible embeddings server: a hashed bag of
// words into 16 dimensions. It counts requests and checks the bearer key.
func fakeEmbeddings(t *testing.T, wantKey string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer "+wantKey {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad json", http.StatusBadRequest)
			return
		}
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		out := struct {
			Data []item `json:"data"`
		}{}
		for i, text := range req.Input {
			v := make([]float32, 16)
			for _, w := range strings.Fields(strings.ToLower(text)) {
				h := 0
				for _, c := range w {
					h = h*31 + int(c)
				}
				v[(h%16+16)%16]++
			}
			v[0] += 0.01
			out.Data = append(out.Data, item{Index: i, Embedding: v})
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func TestSemanticRerankWiring(t *testing.T) {
	c := newCLI(t)
	c.mustRun("", "qa", "add", "--question", "How do I find a data race in Go tests?", "--answer", "Run go test -race ./... and read both stacks.")
	srv, calls := fakeEmbeddings(t, "embed-key")

	out := c.mustRun("", "search", "--json", "data race go tests")
	if calls.Load() != 0 {
		t.Fatalf("semantic search is off by default, yet the embedder was called %d times", calls.Load())
	}
	if !strings.Contains(out, "data race") {
		t.Fatalf("lexical search found nothing: %s", out)
	}

	cfgDir := filepath.Join(c.env["XDG_CONFIG_HOME"], "memex")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf("[semantic]\nenabled = true\nbase_url = %q\nmodel = \"test-embed\"\nweight = 0.5\n", srv.URL+"/v1")
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	c.env["MEMEX_EMBED_API_KEY"] = "embed-key"
	out = c.mustRun("", "search", "--json", "data race go tests")
	if calls.Load() == 0 {
		t.Fatal("semantic search enabled, yet the embedder was never called")
	}
	var ms []map[string]any
	if err := json.Unmarshal([]byte(out), &ms); err != nil || len(ms) != 1 {
		t.Fatalf("search --json with semantic rerank = %s (%v)", out, err)
	}

	// A broken embedder fails open: lexical results, no error.
	c.env["MEMEX_EMBED_API_KEY"] = "wrong"
	code, out, errOut := c.run("", "search", "--json", "data race go tests")
	if code != 0 || !strings.Contains(out, "data race") {
		t.Fatalf("semantic failure did not fail open: exit %d out %s err %s", code, out, errOut)
	}
	if strings.Contains(errOut, "wrong") {
		t.Errorf("the embeddings API key leaked into stderr: %s", errOut)
	}
}
