package semantic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/memex-dev/memex/core"
)

// sleeps records the waits between attempts instead of sleeping.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

func newClient(tb testing.TB, fs *fakeServer, cfg Config, opts ...Option) (*OpenAI, *sleeps) {
	tb.Helper()
	if cfg.BaseURL == "" {
		cfg.BaseURL = fs.URL + "/v1"
	}
	if cfg.Model == "" {
		cfg.Model = "fake-embed"
	}
	c, err := NewOpenAI(cfg, opts...)
	if err != nil {
		tb.Fatalf("NewOpenAI: %v", err)
	}
	s := &sleeps{}
	c.sleep = s.sleep
	return c, s
}

func TestOpenAIRequestShape(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		wantAuth string // "" → header absent
		wantDims *int
	}{
		{name: "no key, no dimensions", cfg: Config{Model: "nomic-embed-text"}},
		{name: "key", cfg: Config{Model: "text-embedding-3-small", APIKey: "sk-test-123"}, wantAuth: "Bearer sk-test-123"},
		{name: "dimensions", cfg: Config{Model: "text-embedding-3-small", Dimensions: 32}, wantDims: ptr(32)},
		{name: "trailing slash", cfg: Config{Model: "m", BaseURL: "/v1/"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFakeServer(t)
			if strings.HasPrefix(tt.cfg.BaseURL, "/") {
				tt.cfg.BaseURL = fs.URL + tt.cfg.BaseURL
			}
			c, _ := newClient(t, fs, tt.cfg)
			texts := []string{"how to delete a git branch", "docker build fails"}
			vs, err := c.Embed(t.Context(), texts)
			if err != nil {
				t.Fatalf("Embed: %v", err)
			}
			reqs := fs.requests()
			if len(reqs) != 1 {
				t.Fatalf("requests = %d, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Path != "/v1/embeddings" {
				t.Errorf("path = %q, want /v1/embeddings", r.Path)
			}
			if r.CType != "application/json" {
				t.Errorf("Content-Type = %q", r.CType)
			}
			if r.Model != tt.cfg.Model || !slices.Equal(r.Input, texts) {
				t.Errorf("body model=%q input=%q, want %q %q", r.Model, r.Input, tt.cfg.Model, texts)
			}
			if tt.wantAuth == "" && r.HasAuth {
				t.Errorf("Authorization header sent without a key: %q", r.Auth)
			}
			if tt.wantAuth != "" && r.Auth != tt.wantAuth {
				t.Errorf("Authorization = %q, want %q", r.Auth, tt.wantAuth)
			}
			_, hasDims := r.rawKeys["dimensions"]
			if (tt.wantDims == nil) == hasDims || (tt.wantDims != nil && *r.Dimensions != *tt.wantDims) {
				t.Errorf("dimensions sent=%v %v, want %v", hasDims, r.Dimensions, tt.wantDims)
			}
			wantD := fakeDims
			if tt.wantDims != nil {
				wantD = *tt.wantDims
			}
			for i, v := range vs {
				if !slices.Equal(v, fakeEmbed(texts[i], wantD)) {
					t.Errorf("vector %d differs from the server's", i)
				}
			}
			if c.Dimensions() != wantD {
				t.Errorf("Dimensions() = %d, want %d", c.Dimensions(), wantD)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestOpenAIBatching(t *testing.T) {
	for _, tt := range []struct {
		name      string
		n, batch  int
		wantSizes []int
	}{
		{name: "uneven", n: 10, batch: 3, wantSizes: []int{3, 3, 3, 1}},
		{name: "exact", n: 4, batch: 2, wantSizes: []int{2, 2}},
		{name: "one batch", n: 5, batch: 0, wantSizes: []int{5}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFakeServer(t)
			c, _ := newClient(t, fs, Config{BatchSize: tt.batch})
			texts := make([]string, tt.n)
			for i := range texts {
				texts[i] = fmt.Sprintf("text number %d word%d", i, i)
			}
			vs, err := c.Embed(t.Context(), texts)
			if err != nil {
				t.Fatal(err)
			}
			var sizes []int
			var all []string
			for _, r := range fs.requests() {
				sizes = append(sizes, len(r.Input))
				all = append(all, r.Input...)
			}
			if !slices.Equal(sizes, tt.wantSizes) || !slices.Equal(all, texts) {
				t.Fatalf("batches %v (inputs %q), want %v in order", sizes, all, tt.wantSizes)
			}
			if len(vs) != tt.n {
				t.Fatalf("%d vectors for %d texts", len(vs), tt.n)
			}
			for i := range vs {
				if !slices.Equal(vs[i], fakeEmbed(texts[i], fakeDims)) {
					t.Fatalf("vector %d is not text %d's", i, i)
				}
			}
		})
	}
}

func TestOpenAIOrdersByIndex(t *testing.T) {
	fs := newFakeServer(t, reply{reverse: true})
	c, _ := newClient(t, fs, Config{})
	texts := []string{"alpha one", "beta two", "gamma three"}
	vs, err := c.Embed(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range texts {
		if !slices.Equal(vs[i], fakeEmbed(texts[i], fakeDims)) {
			t.Fatalf("vector %d is not text %d's: data order was used instead of index", i, i)
		}
	}
}

func TestOpenAIEmptyInput(t *testing.T) {
	fs := newFakeServer(t)
	c, _ := newClient(t, fs, Config{})
	vs, err := c.Embed(t.Context(), nil)
	if err != nil || len(vs) != 0 {
		t.Fatalf("Embed(nil) = %v, %v", vs, err)
	}
	_, err = c.Embed(t.Context(), []string{"fine", "  "})
	if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "texts[1]") {
		t.Fatalf("empty text: err = %v, want ErrInvalid naming texts[1]", err)
	}
	if n := len(fs.requests()); n != 0 {
		t.Fatalf("%d requests sent, want none", n)
	}
}

func TestOpenAIRetries(t *testing.T) {
	date := time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name      string
		script    []reply
		cfg       Config
		wantErr   error // nil → success
		wantReqs  int
		wantSleep []time.Duration // exact, or nil to check count only
		nSleep    int
	}{
		{name: "429 retry-after seconds", script: []reply{{status: 429, header: map[string]string{"Retry-After": "2"}}},
			wantReqs: 2, wantSleep: []time.Duration{2 * time.Second}},
		{name: "503 retry-after then 429", script: []reply{
			{status: 503, header: map[string]string{"Retry-After": "1"}},
			{status: 429, header: map[string]string{"Retry-After": "0.5"}}},
			wantReqs: 3, wantSleep: []time.Duration{time.Second, 500 * time.Millisecond}},
		{name: "503 retry-after http date", script: []reply{{status: 503, header: map[string]string{"Retry-After": date}}},
			wantReqs: 2, nSleep: 1},
		{name: "500 backoff without retry-after", script: []reply{{status: 500}, {status: 502}},
			wantReqs: 3, nSleep: 2},
		{name: "408 retried", script: []reply{{status: 408}}, wantReqs: 2, nSleep: 1},
		{name: "exhausted", script: []reply{{status: 503}, {status: 503}, {status: 503}, {status: 503}},
			wantErr: core.ErrUnavailable, wantReqs: 4, nSleep: 3},
		{name: "max retries 1", cfg: Config{MaxRetries: 1}, script: []reply{{status: 429}, {status: 429}},
			wantErr: core.ErrUnavailable, wantReqs: 2, nSleep: 1},
		{name: "no retries", cfg: Config{MaxRetries: -1}, script: []reply{{status: 503}},
			wantErr: core.ErrUnavailable, wantReqs: 1},
		{name: "retry-after over max wait gives up", cfg: Config{MaxRetryWait: time.Second},
			script:  []reply{{status: 429, header: map[string]string{"Retry-After": "30"}}},
			wantErr: core.ErrUnavailable, wantReqs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFakeServer(t, tt.script...)
			c, sl := newClient(t, fs, tt.cfg)
			vs, err := c.Embed(t.Context(), []string{"retry me"})
			if tt.wantErr == nil && (err != nil || len(vs) != 1) {
				t.Fatalf("Embed = %v, %v; want success", vs, err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if n := len(fs.requests()); n != tt.wantReqs {
				t.Errorf("requests = %d, want %d", n, tt.wantReqs)
			}
			got := sl.got()
			if tt.wantSleep != nil && !slices.Equal(got, tt.wantSleep) {
				t.Errorf("waits = %v, want %v", got, tt.wantSleep)
			}
			if tt.wantSleep == nil && len(got) != tt.nSleep {
				t.Errorf("waits = %v, want %d of them", got, tt.nSleep)
			}
			for _, d := range got {
				if d < 0 || d > DefaultMaxRetryWait {
					t.Errorf("wait %v out of range", d)
				}
			}
		})
	}
}

func TestOpenAIRetryRealSleepHonoursDeadline(t *testing.T) {
	// The real sleeper: a Retry-After beyond the caller's deadline ends the
	// call at once instead of sleeping into it.
	fs := newFakeServer(t, reply{status: 503, header: map[string]string{"Retry-After": "3"}})
	c, err := NewOpenAI(Config{BaseURL: fs.URL + "/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	start := time.Now()
	_, err = c.Embed(ctx, []string{"x"})
	if !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if el := time.Since(start); el > 500*time.Millisecond {
		t.Fatalf("took %v; should give up without waiting", el)
	}
	// And a short real Retry-After is waited for.
	fs2 := newFakeServer(t, reply{status: 429, header: map[string]string{"Retry-After": "0.05"}})
	c2, _ := NewOpenAI(Config{BaseURL: fs2.URL + "/v1", Model: "m"})
	start = time.Now()
	if _, err := c2.Embed(t.Context(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 50*time.Millisecond {
		t.Fatalf("took %v; Retry-After 0.05 not honoured", el)
	}
}

func TestOpenAIClientErrors(t *testing.T) {
	for _, tt := range []struct {
		status   int
		body     string
		wantAuth bool
		wantCode string
	}{
		{status: 400, body: `{"error":{"message":"bad","type":"invalid_request_error","code":"bad_input"}}`, wantCode: "(invalid_request_error/bad_input)"},
		{status: 401, body: `{"error":{"message":"Incorrect API key","type":"invalid_request_error","code":"invalid_api_key"}}`, wantAuth: true},
		{status: 403, wantAuth: true},
		{status: 404, body: "not json"},
		{status: 413},
		{status: 422, body: `{"error":{"type":"Not A Safe Ident with spaces"}}`},
	} {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			fs := newFakeServer(t, reply{status: tt.status, body: tt.body})
			c, sl := newClient(t, fs, Config{})
			_, err := c.Embed(t.Context(), []string{"x"})
			if !errors.Is(err, core.ErrInvalid) || errors.Is(err, core.ErrUnavailable) {
				t.Fatalf("err = %v, want ErrInvalid only", err)
			}
			if errors.Is(err, core.ErrUnauthorized) != tt.wantAuth {
				t.Errorf("ErrUnauthorized = %v, want %v", !tt.wantAuth, tt.wantAuth)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("HTTP %d", tt.status)) {
				t.Errorf("err %q does not name the status", err)
			}
			if tt.wantCode != "" && !strings.Contains(err.Error(), tt.wantCode) {
				t.Errorf("err %q lacks %s", err, tt.wantCode)
			}
			if strings.Contains(err.Error(), "spaces") {
				t.Errorf("err %q carries free text from the body", err)
			}
			if n := len(fs.requests()); n != 1 || len(sl.got()) != 0 {
				t.Errorf("4xx retried: %d requests", n)
			}
		})
	}
}

func TestOpenAITimeouts(t *testing.T) {
	// In a synctest bubble the timeouts elapse in fake time: the test checks
	// the exact time each path takes, whatever the machine's load.
	t.Run("attempt timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fs := &fakeServer{dims: fakeDims, forever: &reply{block: true}}
			c, _ := newInProcessClient(t, fs, Config{Timeout: 50 * time.Millisecond, MaxRetries: 1})
			start := time.Now()
			_, err := c.Embed(t.Context(), []string{"x"})
			if !errors.Is(err, core.ErrUnavailable) {
				t.Fatalf("err = %v, want ErrUnavailable", err)
			}
			if n := len(fs.requests()); n != 2 {
				t.Errorf("requests = %d, want 2 (timeouts are retried)", n)
			}
			if el := time.Since(start); el != 100*time.Millisecond {
				t.Errorf("took %v, want 2 attempts × 50ms", el)
			}
		})
	})
	t.Run("caller deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			fs := &fakeServer{dims: fakeDims, forever: &reply{block: true}}
			c, _ := newInProcessClient(t, fs, Config{})
			start := time.Now()
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			_, err := c.Embed(ctx, []string{"x"})
			if !errors.Is(err, core.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want ErrUnavailable and DeadlineExceeded", err)
			}
			if n := len(fs.requests()); n != 1 {
				t.Errorf("requests = %d, want 1 (caller's deadline is not retried)", n)
			}
			if el := time.Since(start); el != 50*time.Millisecond {
				t.Errorf("took %v, want the caller's 50ms", el)
			}
		})
	})
	t.Run("connection refused", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		c, err := NewOpenAI(Config{BaseURL: url + "/v1", Model: "m", MaxRetries: 1})
		if err != nil {
			t.Fatal(err)
		}
		c.sleep = (&sleeps{}).sleep
		if _, err := c.Embed(t.Context(), []string{"x"}); !errors.Is(err, core.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
	})
}

func TestOpenAIResponseValidation(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		script  []reply
		texts   int
		wantErr []error
		wantMsg string
	}{
		{name: "configured dimensions differ", cfg: Config{Dimensions: 32}, script: []reply{{dims: 64}},
			texts: 2, wantErr: []error{core.ErrInvalid}, wantMsg: "64 dimensions, want 32"},
		{name: "mixed lengths in one response", texts: 2, wantErr: []error{core.ErrInvalid}, wantMsg: "dimensions",
			script: []reply{{body: `{"data":[{"index":0,"embedding":[1,2,3]},{"index":1,"embedding":[1,2]}]}`}}},
		{name: "dimensions change across batches", cfg: Config{BatchSize: 1}, script: []reply{{dims: 64}, {dims: 16}},
			texts: 2, wantErr: []error{core.ErrInvalid}, wantMsg: "16 dimensions, want 64"},
		{name: "too few vectors", texts: 2, wantErr: []error{core.ErrInvalid}, wantMsg: "1 vectors for 2 inputs",
			script: []reply{{body: `{"data":[{"index":0,"embedding":[1,2]}]}`}}},
		{name: "duplicate index", texts: 2, wantErr: []error{core.ErrInvalid}, wantMsg: "repeated",
			script: []reply{{body: `{"data":[{"index":1,"embedding":[1]},{"index":1,"embedding":[2]}]}`}}},
		{name: "oversize body", cfg: Config{MaxResponseBytes: 512}, texts: 20,
			wantErr: []error{core.ErrTooLarge, core.ErrInvalid}, wantMsg: "over 512 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFakeServer(t, tt.script...)
			c, _ := newClient(t, fs, tt.cfg)
			texts := make([]string, tt.texts)
			for i := range texts {
				texts[i] = fmt.Sprintf("input %d", i)
			}
			_, err := c.Embed(t.Context(), texts)
			for _, want := range tt.wantErr {
				if !errors.Is(err, want) {
					t.Errorf("err = %v, want %v", err, want)
				}
			}
			if err != nil && !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err %q lacks %q", err, tt.wantMsg)
			}
		})
	}
}

func TestOpenAINoSecretsInErrorsOrLogs(t *testing.T) {
	const key = "sk-live-SUPERSECRET-0123456789"
	const text = "my private question about hunter2"
	echo := fmt.Sprintf(`{"error":{"message":"Incorrect API key provided: %s for input %s","type":"invalid_request_error"}}`, key, text)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	cases := map[string]func(t *testing.T) error{
		"401 echoing key and input": func(t *testing.T) error {
			fs := newFakeServer(t, reply{status: 401, body: echo})
			c, _ := newClient(t, fs, Config{APIKey: key}, WithLogger(logger))
			_, err := c.Embed(t.Context(), []string{text})
			return err
		},
		"503 retried then given up": func(t *testing.T) error {
			fs := newFakeServer(t)
			fs.forever = &reply{status: 503, body: echo}
			c, _ := newClient(t, fs, Config{APIKey: key}, WithLogger(logger))
			_, err := c.Embed(t.Context(), []string{text})
			return err
		},
		"credentials in base url, server gone": func(t *testing.T) error {
			srv := httptest.NewServer(http.NotFoundHandler())
			u := strings.Replace(srv.URL, "http://", "http://user:"+key+"@", 1) + "/v1?api_key=" + key
			srv.Close()
			c, err := NewOpenAI(Config{BaseURL: u, Model: "m", APIKey: key, MaxRetries: 1}, WithLogger(logger))
			if err != nil {
				t.Fatal(err)
			}
			c.sleep = (&sleeps{}).sleep
			_, err = c.Embed(t.Context(), []string{text})
			return err
		},
		"bad response": func(t *testing.T) error {
			fs := newFakeServer(t, reply{body: `{"data":"` + key + text + `"}`})
			c, _ := newClient(t, fs, Config{APIKey: key}, WithLogger(logger))
			_, err := c.Embed(t.Context(), []string{text})
			return err
		},
	}
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			err := run(t)
			if err == nil {
				t.Fatal("want an error")
			}
			for _, secret := range []string{"SUPERSECRET", "hunter2", "private question"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error leaks %q: %v", secret, err)
				}
			}
		})
	}
	if !strings.Contains(logs.String(), "retrying") {
		t.Errorf("no retry was logged (test is not checking logs): %q", logs.String())
	}
	for _, secret := range []string{"SUPERSECRET", "hunter2", "private question"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("log leaks %q", secret)
		}
	}
}

func TestNewOpenAIConfig(t *testing.T) {
	for _, tt := range []struct {
		name  string
		cfg   Config
		field string
	}{
		{name: "no model", cfg: Config{BaseURL: "http://x/v1"}, field: "model"},
		{name: "no base url", cfg: Config{Model: "m"}, field: "base_url"},
		{name: "bad scheme", cfg: Config{Model: "m", BaseURL: "ftp://x"}, field: "base_url"},
		{name: "negative timeout", cfg: Config{Model: "m", BaseURL: "http://x", Timeout: -1}, field: "timeout"},
		{name: "negative batch", cfg: Config{Model: "m", BaseURL: "http://x", BatchSize: -1}, field: "batch_size"},
		{name: "negative dims", cfg: Config{Model: "m", BaseURL: "http://x", Dimensions: -1}, field: "dimensions"},
		{name: "ok", cfg: Config{Model: "m", BaseURL: "http://127.0.0.1:11434/v1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewOpenAI(tt.cfg)
			if tt.field == "" {
				if err != nil || c.Name() != "openai:m" {
					t.Fatalf("NewOpenAI = %v, %v", c, err)
				}
				return
			}
			var fe *core.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field || !errors.Is(err, core.ErrInvalid) {
				t.Fatalf("err = %v, want a FieldError on %s", err, tt.field)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{
		{"", -1}, {"3", 3 * time.Second}, {"0", 0}, {"1.5", 1500 * time.Millisecond}, {"-1", -1},
		{"soon", -1}, {"NaN", -1}, {"99999999", -1},
		{now.Add(10 * time.Second).Format(http.TimeFormat), 10 * time.Second},
		{now.Add(-10 * time.Second).Format(http.TimeFormat), 0},
	} {
		if got := parseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
