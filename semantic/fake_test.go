package semantic

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode"
)

// fakeDims is the fake model's vector length.
const fakeDims = 64

// synonyms maps words to a canonical one so paraphrases share dimensions in
// the fake model, the way a real embedding model places them close.
var synonyms = map[string]string{
	"erase": "delete", "remove": "delete", "drop": "delete", "rm": "delete",
	"fix": "repair", "resolve": "repair", "solve": "repair",
	"error": "failure", "fails": "failure", "failing": "failure", "crash": "failure", "crashes": "failure",
	"speed": "fast", "faster": "fast", "quick": "fast", "slow": "fast",
	"setup": "install", "installing": "install",
	"container": "docker", "image": "docker",
	"branches": "branch", "tests": "test", "testing": "test",
}

var fakeStop = map[string]bool{"a": true, "an": true, "the": true, "how": true, "do": true, "i": true, "to": true, "my": true, "of": true, "in": true, "is": true, "it": true, "on": true, "for": true, "with": true, "and": true}

// fakeEmbed is the deterministic fake model: a hashed bag of canonical words
// in fakeDims dimensions (unnormalised; cosine does not care).
func fakeEmbed(text string, dims int) []float32 {
	v := make([]float32, dims)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if fakeStop[w] {
			continue
		}
		if s, ok := synonyms[w]; ok {
			w = s
		}
		h := fnv.New32a()
		_, _ = h.Write([]byte(w))
		v[h.Sum32()%uint32(dims)]++
	}
	if allZero(v) {
		v[0] = 1e-3
	}
	return v
}

func allZero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// fakeEmbedder is the in-process fake model; it counts calls and texts.
type fakeEmbedder struct {
	dims  int
	err   error
	calls atomic.Int64
	mu    sync.Mutex
	texts [][]string
}

func (f *fakeEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	f.calls.Add(1)
	f.mu.Lock()
	f.texts = append(f.texts, append([]string(nil), texts...))
	f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	d := f.dims
	if d == 0 { // unknown dimensions: the model still answers in fakeDims
		d = fakeDims
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = fakeEmbed(t, d)
	}
	return out, nil
}
func (f *fakeEmbedder) Dimensions() int { return f.dims }
func (f *fakeEmbedder) Name() string    { return "fake" }

// seenRequest is what the fake server received.
type seenRequest struct {
	Path       string
	Auth       string
	HasAuth    bool
	CType      string
	Model      string
	Input      []string
	Dimensions *int
	rawKeys    map[string]json.RawMessage
}

// reply scripts one response of the fake server; a zero reply embeds.
type reply struct {
	status  int
	header  map[string]string
	body    string
	reverse bool // answer data in reverse order (indexes kept right)
	dims    int  // override vector length
	block   bool // wait for the request context to end
}

// fakeServer is an OpenAI-compatible embeddings server for tests.
type fakeServer struct {
	*httptest.Server
	mu      sync.Mutex
	seen    []seenRequest
	script  []reply // consumed one per request, then embeds normally
	dims    int
	forever *reply // when set, every request gets it
}

func newFakeServer(tb testing.TB, script ...reply) *fakeServer {
	tb.Helper()
	fs := &fakeServer{script: script, dims: fakeDims}
	fs.Server = httptest.NewServer(http.HandlerFunc(fs.handle))
	tb.Cleanup(fs.Close)
	return fs
}

// newInProcessClient is newClient over a fake server that answers in the
// test's own process (no listener, no socket), so the test can run in a
// testing/synctest bubble: timeouts then elapse in fake time, exactly.
func newInProcessClient(tb testing.TB, fs *fakeServer, cfg Config) (*OpenAI, *sleeps) {
	tb.Helper()
	cfg.BaseURL = "http://embeddings.test/v1"
	return newClient(tb, fs, cfg, WithHTTPClient(&http.Client{Transport: inProcess(fs.handle)}))
}

// inProcess is an http.RoundTripper that serves each request with a handler
// in the caller's process, honouring the request's context as a network
// client would.
type inProcess http.HandlerFunc

func (h inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h(rec, r)
	}()
	select {
	case <-done:
		return rec.Result(), nil
	case <-r.Context().Done():
		<-done
		return nil, r.Context().Err()
	}
}

func (fs *fakeServer) requests() []seenRequest {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([]seenRequest(nil), fs.seen...)
}

func (fs *fakeServer) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Model      string   `json:"model"`
		Input      []string `json:"input"`
		Dimensions *int     `json:"dimensions"`
	}
	_ = json.Unmarshal(body, &req)
	var keys map[string]json.RawMessage
	_ = json.Unmarshal(body, &keys)
	_, hasAuth := r.Header["Authorization"]
	fs.mu.Lock()
	fs.seen = append(fs.seen, seenRequest{Path: r.URL.Path, Auth: r.Header.Get("Authorization"), HasAuth: hasAuth,
		CType: r.Header.Get("Content-Type"), Model: req.Model, Input: req.Input, Dimensions: req.Dimensions, rawKeys: keys})
	var rp reply
	switch {
	case fs.forever != nil:
		rp = *fs.forever
	case len(fs.script) > 0:
		rp, fs.script = fs.script[0], fs.script[1:]
	}
	fs.mu.Unlock()

	if rp.block {
		<-r.Context().Done()
		return
	}
	for k, v := range rp.header {
		w.Header().Set(k, v)
	}
	if rp.status != 0 && rp.status != http.StatusOK {
		w.WriteHeader(rp.status)
		_, _ = io.WriteString(w, rp.body)
		return
	}
	if rp.body != "" {
		_, _ = io.WriteString(w, rp.body)
		return
	}
	if r.URL.Path != "/v1/embeddings" || r.Method != http.MethodPost {
		http.Error(w, `{"error":{"message":"no route","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	dims := fs.dims
	if req.Dimensions != nil {
		dims = *req.Dimensions
	}
	if rp.dims != 0 {
		dims = rp.dims
	}
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	data := make([]item, len(req.Input))
	for i, t := range req.Input {
		data[i] = item{Object: "embedding", Index: i, Embedding: fakeEmbed(t, dims)}
	}
	if rp.reverse {
		for i, j := 0, len(data)-1; i < j; i, j = i+1, j-1 {
			data[i], data[j] = data[j], data[i]
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model,
		"usage": map[string]int{"prompt_tokens": 1, "total_tokens": 1}})
}
