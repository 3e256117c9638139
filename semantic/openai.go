package semantic

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memex-dev/memex/core"
)

// Defaults of Config.
const (
	DefaultTimeout          = 10 * time.Second
	DefaultBatchSize        = 64
	DefaultMaxRetries       = 3
	DefaultMaxResponseBytes = 32 << 20
	DefaultMaxRetryWait     = 5 * time.Second
	defaultBackoff          = 200 * time.Millisecond
)

// Config configures an OpenAI-compatible embeddings client. It is plain data
// (cmd/memex fills it from [semantic] and MEMEX_EMBED_API_KEY).
type Config struct {
	// BaseURL is the API root; requests go to BaseURL + "/embeddings"
	// ("https://api.openai.com/v1", "http://127.0.0.1:8080/v1" for
	// llama.cpp, "http://127.0.0.1:11434/v1" for Ollama). Required.
	BaseURL string
	// Model is sent as "model". Required.
	Model string
	// APIKey, when set, is sent as "Authorization: Bearer <key>". It never
	// appears in an error or a log line.
	APIKey string
	// Timeout bounds each HTTP attempt (0 → DefaultTimeout). The caller's
	// context bounds the whole call, retries included.
	Timeout time.Duration
	// BatchSize is the number of texts per request (0 → DefaultBatchSize).
	BatchSize int
	// Dimensions, when > 0, is sent as "dimensions" (models that can shorten
	// their vectors) and every vector must have that length.
	Dimensions int
	// MaxRetries is the number of retries after a 408/429/5xx or network
	// error (0 → DefaultMaxRetries; < 0 → none).
	MaxRetries int
	// MaxRetryWait caps one wait between attempts (0 → DefaultMaxRetryWait).
	// A Retry-After longer than this, or past the context's deadline, ends
	// the call at once with core.ErrUnavailable instead of sleeping.
	MaxRetryWait time.Duration
	// MaxResponseBytes bounds a response body (0 → DefaultMaxResponseBytes);
	// a longer body is an error wrapping core.ErrTooLarge and core.ErrInvalid.
	MaxResponseBytes int64
}

// OpenAI is an Embedder speaking the OpenAI embeddings API
// (POST {base_url}/embeddings). It is safe for concurrent use.
type OpenAI struct {
	cfg      Config
	endpoint string // BaseURL + "/embeddings"
	where    string // endpoint without userinfo or query, for errors
	client   *http.Client
	log      *slog.Logger
	sleep    func(context.Context, time.Duration) error
	dims     atomic.Int64
}

// Option configures an OpenAI client.
type Option func(*OpenAI)

// WithHTTPClient sets the HTTP client (default: a client with no overall
// timeout; Config.Timeout bounds each attempt).
func WithHTTPClient(c *http.Client) Option { return func(o *OpenAI) { o.client = c } }

// WithLogger sets the logger for retries (debug level). Silent by default.
func WithLogger(l *slog.Logger) Option { return func(o *OpenAI) { o.log = l } }

// NewOpenAI validates cfg and returns a client. It does no I/O.
func NewOpenAI(cfg Config, opts ...Option) (*OpenAI, error) {
	if cfg.Model == "" {
		return nil, fmt.Errorf("semantic: %w", core.Invalid("model", "is required"))
	}
	u, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("semantic: %w", core.Invalid("base_url", "must be an http:// or https:// URL"))
	}
	switch {
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("semantic: %w", core.Invalid("timeout", "must not be negative"))
	case cfg.BatchSize < 0:
		return nil, fmt.Errorf("semantic: %w", core.Invalid("batch_size", "must not be negative"))
	case cfg.Dimensions < 0:
		return nil, fmt.Errorf("semantic: %w", core.Invalid("dimensions", "must not be negative"))
	case cfg.MaxResponseBytes < 0:
		return nil, fmt.Errorf("semantic: %w", core.Invalid("max_response_bytes", "must not be negative"))
	case cfg.MaxRetryWait < 0:
		return nil, fmt.Errorf("semantic: %w", core.Invalid("max_retry_wait", "must not be negative"))
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = DefaultMaxRetries
	} else if cfg.MaxRetries < 0 {
		cfg.MaxRetries = 0
	}
	if cfg.MaxRetryWait == 0 {
		cfg.MaxRetryWait = DefaultMaxRetryWait
	}
	if cfg.MaxResponseBytes == 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	o := &OpenAI{cfg: cfg, endpoint: u.String() + "/embeddings", sleep: sleepCtx}
	safe := *u
	safe.User, safe.RawQuery, safe.Fragment = nil, "", ""
	o.where = safe.Host + safe.Path + "/embeddings"
	for _, opt := range opts {
		opt(o)
	}
	if o.client == nil {
		o.client = &http.Client{}
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	o.dims.Store(int64(cfg.Dimensions))
	return o, nil
}

// Name is "openai:" + the model.
func (o *OpenAI) Name() string { return "openai:" + o.cfg.Model }

// Dimensions is Config.Dimensions, else the length learned from the first
// successful response, else 0.
func (o *OpenAI) Dimensions() int { return int(o.dims.Load()) }

var _ Embedder = (*OpenAI)(nil)

type embedRequest struct {
	Model      string   `json:"model"`
	Input      []string `json:"input"`
	Dimensions int      `json:"dimensions,omitempty"`
}

// Embed embeds texts in batches of Config.BatchSize, sequentially. See
// Embedder for the contract.
func (o *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return [][]float32{}, nil
	}
	for i, t := range texts {
		if strings.TrimSpace(t) == "" {
			return nil, fmt.Errorf("semantic: embed: %w", core.Invalid(fmt.Sprintf("texts[%d]", i), "is empty"))
		}
	}
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += o.cfg.BatchSize {
		end := min(start+o.cfg.BatchSize, len(texts))
		vs, err := o.embedBatch(ctx, texts[start:end])
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	return out, nil
}

func (o *OpenAI) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	body, err := json.Marshal(embedRequest{Model: o.cfg.Model, Input: texts, Dimensions: o.cfg.Dimensions})
	if err != nil { // strings and ints always marshal; kept for safety
		return nil, fmt.Errorf("semantic: embed: encode request: %w", core.ErrInvalid)
	}
	var last error
	for attempt := 0; ; attempt++ {
		vs, retryAfter, retry, err := o.attempt(ctx, body, len(texts))
		if err == nil {
			return vs, nil
		}
		last = err
		if !retry || attempt >= o.cfg.MaxRetries {
			return nil, last
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (%w)", last, ctx.Err())
		}
		wait := retryAfter
		if wait < 0 {
			wait = backoff(attempt)
		}
		if wait > o.cfg.MaxRetryWait {
			return nil, fmt.Errorf("%w; not retrying: wait %s exceeds max_retry_wait", last, wait.Round(time.Millisecond))
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return nil, fmt.Errorf("%w; not retrying: wait %s exceeds the deadline", last, wait.Round(time.Millisecond))
		}
		o.log.Debug("embeddings request failed; retrying", "endpoint", o.where, "attempt", attempt+1, "wait", wait, "error", last)
		if err := o.sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("%w (%w)", last, err)
		}
	}
}

// errf builds an error naming the endpoint (no credentials) and wrapping
// cause's kind. cause's text is included only for errors we built ourselves
// or network errors stripped of their URL.
func (o *OpenAI) errf(cause error, format string, args ...any) error {
	msg := fmt.Errorf(format, args...)
	if cause != nil {
		return fmt.Errorf("semantic: embeddings %s: %s: %w", o.where, safeCause(cause), msg)
	}
	return fmt.Errorf("semantic: embeddings %s: %w", o.where, msg)
}

// safeCause renders err without any URL (a *url.Error carries the full
// request URL, which may hold credentials).
func safeCause(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// attempt makes one HTTP request. retryAfter is the server's Retry-After, or
// -1 when absent.
func (o *OpenAI) attempt(ctx context.Context, body []byte, n int) (_ [][]float32, retryAfter time.Duration, retry bool, _ error) {
	retryAfter = -1
	actx, cancel := context.WithTimeout(ctx, o.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, o.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, retryAfter, false, o.errf(nil, "build request: %w", core.ErrInvalid)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if o.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.cfg.APIKey)
	}
	resp, err := o.client.Do(req)
	if err != nil {
		return nil, retryAfter, true, o.errf(err, "%w", core.ErrUnavailable) // the loop stops on ctx.Err()
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
	}()
	if resp.StatusCode != http.StatusOK {
		code := apiErrorCode(resp.Body)
		switch {
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode >= 500:
			retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
			return nil, retryAfter, true, o.errf(nil, "HTTP %d%s: %w", resp.StatusCode, code, core.ErrUnavailable)
		case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
			return nil, retryAfter, false, o.errf(nil, "HTTP %d%s: %w: %w", resp.StatusCode, code, core.ErrInvalid, core.ErrUnauthorized)
		default:
			return nil, retryAfter, false, o.errf(nil, "HTTP %d%s: %w", resp.StatusCode, code, core.ErrInvalid)
		}
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, o.cfg.MaxResponseBytes+1))
	if err != nil {
		return nil, retryAfter, true, o.errf(err, "read response: %w", core.ErrUnavailable)
	}
	if int64(len(raw)) > o.cfg.MaxResponseBytes {
		return nil, retryAfter, false, o.errf(nil, "response body over %d bytes: %w: %w", o.cfg.MaxResponseBytes, core.ErrTooLarge, core.ErrInvalid)
	}
	vs, err := DecodeEmbeddings(raw, n)
	if err != nil {
		return nil, retryAfter, false, o.errf(nil, "%w", err)
	}
	dim := len(vs[0])
	if want := int(o.dims.Load()); want != 0 && want != dim {
		return nil, retryAfter, false, o.errf(nil, "vectors have %d dimensions, want %d: %w", dim, want, core.ErrInvalid)
	}
	o.dims.CompareAndSwap(0, int64(dim))
	return vs, retryAfter, false, nil
}

// apiErrorCode extracts a short, safe identifier from an OpenAI-style error
// body ({"error":{"type":"...","code":"..."}}) for the error message. The
// free-text "message" is never used: servers echo input or partial keys in it.
func apiErrorCode(r io.Reader) string {
	var e struct {
		Error struct {
			Type string `json:"type"`
			Code any    `json:"code"`
		} `json:"error"`
	}
	if json.NewDecoder(io.LimitReader(r, 16<<10)).Decode(&e) != nil {
		return ""
	}
	var parts []string
	if safeIdent().MatchString(e.Error.Type) {
		parts = append(parts, e.Error.Type)
	}
	if c, ok := e.Error.Code.(string); ok && safeIdent().MatchString(c) && c != e.Error.Type {
		parts = append(parts, c)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "/") + ")"
}

var safeIdent = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`) })

// parseRetryAfter reads a Retry-After header (delay seconds or an HTTP
// date); -1 when absent or unreadable.
func parseRetryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return -1
	}
	if s, err := strconv.ParseFloat(h, 64); err == nil {
		if s < 0 || math.IsNaN(s) || s > 86400 {
			return -1
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(0, t.Sub(now))
	}
	return -1
}

// backoff is the wait before retry attempt+1 without Retry-After:
// 200 ms · 2^attempt, with ±25 % jitter.
func backoff(attempt int) time.Duration {
	d := defaultBackoff << min(attempt, 6)
	j := time.Duration(rand.Int64N(int64(d)/2+1)) - d/4
	return d + j
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// DecodeEmbeddings decodes an OpenAI embeddings response body holding n
// vectors: data[].embedding (a JSON array of numbers, or a base64 string of
// little-endian float32s as sent with encoding_format=base64) placed by
// data[].index. It checks that every index in [0, n) appears exactly once,
// that every vector is non-empty, finite and of the same length. Errors wrap
// core.ErrInvalid and never contain the body.
func DecodeEmbeddings(body []byte, n int) ([][]float32, error) {
	var resp struct {
		Data []struct {
			Index     *int            `json:"index"`
			Embedding json.RawMessage `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("decode response: not an embeddings object: %w", core.ErrInvalid)
	}
	if len(resp.Data) != n {
		return nil, fmt.Errorf("decode response: %d vectors for %d inputs: %w", len(resp.Data), n, core.ErrInvalid)
	}
	out := make([][]float32, n)
	dim := -1
	for i, d := range resp.Data {
		idx := i // servers that omit index answer in input order
		if d.Index != nil {
			idx = *d.Index
		}
		if idx < 0 || idx >= n {
			return nil, fmt.Errorf("decode response: data[%d].index %d out of range [0,%d): %w", i, idx, n, core.ErrInvalid)
		}
		if out[idx] != nil {
			return nil, fmt.Errorf("decode response: data[%d].index %d repeated: %w", i, idx, core.ErrInvalid)
		}
		v, err := decodeVector(d.Embedding)
		if err != nil {
			return nil, fmt.Errorf("decode response: data[%d].embedding: %w", i, err)
		}
		if len(v) == 0 {
			return nil, fmt.Errorf("decode response: data[%d].embedding is empty: %w", i, core.ErrInvalid)
		}
		if dim >= 0 && len(v) != dim {
			return nil, fmt.Errorf("decode response: data[%d].embedding has %d dimensions, data[0] has %d: %w", i, len(v), dim, core.ErrInvalid)
		}
		dim = len(v)
		out[idx] = v
	}
	return out, nil
}

func decodeVector(raw json.RawMessage) ([]float32, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("bad string: %w", core.ErrInvalid)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("bad base64: %w", core.ErrInvalid)
		}
		v, err := Decode(b)
		if err != nil {
			return nil, err
		}
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, fmt.Errorf("non-finite value: %w", core.ErrInvalid)
			}
		}
		return v, nil
	}
	var fs []float64
	if err := json.Unmarshal(raw, &fs); err != nil {
		return nil, fmt.Errorf("not an array of numbers: %w", core.ErrInvalid)
	}
	v := make([]float32, len(fs))
	for i, f := range fs {
		x := float32(f)
		if math.IsInf(float64(x), 0) { // finite float64 too large for float32
			return nil, fmt.Errorf("value out of float32 range: %w", core.ErrInvalid)
		}
		v[i] = x
	}
	return v, nil
}
