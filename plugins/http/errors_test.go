package httpstore

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/memex-dev/memex/core"
)

func TestStatusMapping(t *testing.T) {
	sentinels := []error{core.ErrInvalid, core.ErrUnauthorized, core.ErrForbidden, core.ErrNotFound,
		core.ErrConflict, core.ErrTooLarge, core.ErrUnavailable, core.ErrSecret}
	tests := []struct {
		status   int
		body     string
		want     error
		attempts int // 1 + retries (Retries: 2)
	}{
		{400, `{"error":{"code":"invalid","message":"limit: must be between 1 and 50"}}`, core.ErrInvalid, 1},
		{401, `{"error":{"code":"unauthorized","message":"no key"}}`, core.ErrUnauthorized, 1},
		{403, `{"error":{"code":"forbidden","message":"project acme"}}`, core.ErrForbidden, 1},
		{403, ``, core.ErrForbidden, 1},                                                // a bare 403 (a proxy, the original service)
		{403, `{"code":403,"msg":"no access to this project"}`, core.ErrForbidden, 1},  // the original's envelope on a 403
		{403, `{"detail":"Not authenticated for project acme"}`, core.ErrForbidden, 1}, // FastAPI's string detail
		{404, `{"error":{"code":"not_found","message":"qa q1"}}`, core.ErrNotFound, 1},
		{405, ``, core.ErrInvalid, 1},
		{408, ``, core.ErrUnavailable, 3},
		{409, `{"error":{"code":"conflict","message":"frozen"}}`, core.ErrConflict, 1},
		{413, `{"error":{"code":"too_large","message":"body"}}`, core.ErrTooLarge, 1},
		{422, `{"detail":[{"loc":["body","limit"],"msg":"ensure this value is less than or equal to 20","type":"value_error"}]}`, core.ErrInvalid, 1},
		{429, `{"error":{"code":"rate_limited","message":"slow down"}}`, core.ErrUnavailable, 3},
		{500, `<html>internal</html>`, core.ErrUnavailable, 3},
		{502, ``, core.ErrUnavailable, 3},
		{503, `{"error":{"code":"unavailable","message":"redis down"}}`, core.ErrUnavailable, 3},
		{504, ``, core.ErrUnavailable, 3},
		{501, `{"error":{"code":"not_implemented","message":"expiry on the x store is not available on this server"}}`, core.ErrInvalid, 1},
		{422, `{"error":{"code":"secret_detected","message":"the payload holds a secret and was not stored"}}`, core.ErrSecret, 1},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%d %s", tc.status, tc.want), func(t *testing.T) {
			s, rc, _ := newFake(t, Config{Retries: 2}, answer(tc.status, tc.body))
			_, err := s.Get(t.Context(), "acme", "q1")
			for _, sen := range sentinels {
				if got := errors.Is(err, sen); got != (sen == tc.want) {
					t.Errorf("errors.Is(err, %v) = %v (err: %v)", sen, got, err)
				}
			}
			var se *StatusError
			if !errors.As(err, &se) || se.Status != tc.status {
				t.Errorf("err = %v, want a *StatusError with status %d", err, tc.status)
			}
			if n := len(rc.requests()); n != tc.attempts {
				t.Errorf("attempts = %d, want %d", n, tc.attempts)
			}
		})
	}
}

func TestConnectionErrorsAreUnavailable(t *testing.T) {
	s, rc, _ := newFake(t, Config{Retries: 1}, fail(dialRefused()))
	_, err := s.Get(t.Context(), "acme", "q1")
	if !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if n := len(rc.requests()); n != 2 {
		t.Errorf("attempts = %d, want 2", n)
	}
}

func TestFieldNames(t *testing.T) {
	tests := []struct {
		name, body string
		status     int
		field      string
	}{
		{"memex message prefix", `{"error":{"code":"invalid","message":"limit: must be between 1 and 50"}}`, 400, "limit"},
		{"memex field key", `{"error":{"code":"invalid","message":"must be pass or fail","field":"result"}}`, 400, "result"},
		{"indexed field", `{"error":{"code":"invalid","message":"references[3].qa_id: is required"}}`, 400, "references[3].qa_id"},
		{"fastapi detail", `{"detail":[{"loc":["body","references",0,"qa_id"],"msg":"field required","type":"value_error.missing"}]}`, 422, "references[0].qa_id"},
		{"original in body", `{"code":400,"msg":"result: Missing validation result","data":{}}`, 200, "result"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _, _ := newFake(t, Config{}, answer(tc.status, tc.body))
			_, err := s.RecordValidation(t.Context(), core.ValidateRequest{ProjectID: "acme", QAID: "q1", Result: "pass"})
			var fe *core.FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("err = %v, want a FieldError on %q", err, tc.field)
			}
			if !errors.Is(err, core.ErrInvalid) {
				t.Errorf("err = %v does not wrap ErrInvalid", err)
			}
		})
	}
}

func TestStatusErrorNamesTheRequestID(t *testing.T) {
	s, _, _ := newFake(t, Config{}, answer(404, `{"error":{"code":"not_found","message":"qa q1"}}`, "X-Request-Id", "req-77"))
	_, err := s.Get(t.Context(), "acme", "q1")
	var se *StatusError
	if !errors.As(err, &se) || se.RequestID != "req-77" || !strings.Contains(err.Error(), "req-77") {
		t.Fatalf("err = %v; want the request id", err)
	}
}

func TestNoFieldWithoutOne(t *testing.T) {
	s, _, _ := newFake(t, Config{}, answer(400, `{"error":{"code":"invalid","message":"malformed JSON body"}}`))
	_, err := s.Get(t.Context(), "acme", "q1")
	var fe *core.FieldError
	if errors.As(err, &fe) || !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("err = %v: want ErrInvalid without a field", err)
	}
}

func TestRetryBackoffAndRetryAfter(t *testing.T) {
	t.Run("exponential with jitter", func(t *testing.T) {
		s, rc, sl := newFake(t, Config{Retries: 3}, answer(503, ``))
		_, err := s.Search(t.Context(), core.SearchRequest{ProjectID: "acme", Query: "x"})
		if !errors.Is(err, core.ErrUnavailable) {
			t.Fatalf("err = %v", err)
		}
		if n := len(rc.requests()); n != 4 {
			t.Fatalf("attempts = %d, want 4", n)
		}
		w := sl.waits()
		if len(w) != 3 {
			t.Fatalf("waits = %v, want 3", w)
		}
		for i, d := range w {
			base := 100 * time.Millisecond << i
			if d < base/2 || d >= base {
				t.Errorf("wait %d = %v, want in [%v, %v)", i, d, base/2, base)
			}
		}
	})
	t.Run("Retry-After seconds on 429", func(t *testing.T) {
		s, _, sl := newFake(t, Config{Retries: 1}, answer(429, ``, "Retry-After", "7"), answer(200, `[]`))
		if _, err := s.Search(t.Context(), core.SearchRequest{ProjectID: "acme", Query: "x"}); err != nil {
			t.Fatal(err)
		}
		if w := sl.waits(); len(w) != 1 || w[0] != 7*time.Second {
			t.Fatalf("waits = %v, want [7s]", w)
		}
	})
	t.Run("Retry-After date on 503", func(t *testing.T) {
		now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		rc := &recorder{answers: []func(*http.Request) (*http.Response, error){
			answer(503, ``, "Retry-After", now.Add(3*time.Second).Format(http.TimeFormat)), answer(200, `[]`),
		}}
		sl := &sleeps{}
		s, err := New(Config{BaseURL: "http://memex.test", Retries: 1}, WithHTTPClient(&http.Client{Transport: rc}),
			WithSleep(sl.sleep), WithClock(func() time.Time { return now }))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Search(t.Context(), core.SearchRequest{ProjectID: "acme", Query: "x"}); err != nil {
			t.Fatal(err)
		}
		if w := sl.waits(); len(w) != 1 || w[0] != 3*time.Second {
			t.Fatalf("waits = %v, want [3s]", w)
		}
	})
	t.Run("Retry-After past the deadline gives up at once", func(t *testing.T) {
		s, rc, sl := newFake(t, Config{Retries: 3}, answer(503, ``, "Retry-After", "30"))
		ctx, cancel := contextWithTimeout(t, time.Second)
		defer cancel()
		_, err := s.Search(ctx, core.SearchRequest{ProjectID: "acme", Query: "x"})
		if !errors.Is(err, core.ErrUnavailable) {
			t.Fatalf("err = %v", err)
		}
		if n, w := len(rc.requests()), sl.waits(); n != 1 || len(w) != 0 {
			t.Fatalf("attempts %d waits %v: want 1 attempt and no wait", n, w)
		}
	})
	t.Run("4xx never retried", func(t *testing.T) {
		for _, st := range []int{400, 401, 403, 404, 409, 413, 422} {
			s, rc, _ := newFake(t, Config{Retries: 3}, answer(st, ``))
			_, _ = s.RecordHit(t.Context(), core.HitRequest{ProjectID: "acme", References: []core.HitRef{{QAID: "a"}}})
			if n := len(rc.requests()); n != 1 {
				t.Errorf("status %d: %d attempts, want 1", st, n)
			}
		}
	})
	t.Run("no retries", func(t *testing.T) {
		s, rc, _ := newFake(t, Config{Retries: -1}, answer(503, ``))
		_, _ = s.Search(t.Context(), core.SearchRequest{ProjectID: "acme", Query: "x"})
		if n := len(rc.requests()); n != 1 {
			t.Errorf("attempts = %d, want 1", n)
		}
	})
}

func TestCompatWritesRetriedOnlyWhenNeverSent(t *testing.T) {
	hit := core.HitRequest{ProjectID: "acme", References: []core.HitRef{{QAID: "a"}}}
	t.Run("503 not retried", func(t *testing.T) {
		s, rc, _ := newFake(t, Config{Compat: true, Retries: 3}, answer(503, ``))
		if _, err := s.RecordHit(t.Context(), hit); !errors.Is(err, core.ErrUnavailable) {
			t.Fatalf("err = %v", err)
		}
		if n := len(rc.requests()); n != 1 {
			t.Errorf("attempts = %d, want 1", n)
		}
	})
	t.Run("dial error retried", func(t *testing.T) {
		s, rc, _ := newFake(t, Config{Compat: true, Retries: 3}, fail(dialRefused()), answer(200, `{"code":0,"msg":"success","data":{}}`))
		if _, err := s.RecordHit(t.Context(), hit); err != nil {
			t.Fatal(err)
		}
		if n := len(rc.requests()); n != 2 {
			t.Errorf("attempts = %d, want 2", n)
		}
	})
	t.Run("reads retried", func(t *testing.T) {
		s, rc, _ := newFake(t, Config{Compat: true, Retries: 3}, answer(503, ``), answer(200, `[]`))
		if _, err := s.Search(t.Context(), core.SearchRequest{ProjectID: "acme", Query: "x"}); err != nil {
			t.Fatal(err)
		}
		if n := len(rc.requests()); n != 2 {
			t.Errorf("attempts = %d, want 2", n)
		}
	})
}

func TestCooldownAfterOutage(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rc := &recorder{answers: []func(*http.Request) (*http.Response, error){fail(dialRefused()), fail(dialRefused()), answer(200, `[]`)}}
	s, err := New(Config{BaseURL: "http://memex.test", Retries: 1}, WithHTTPClient(&http.Client{Transport: rc}),
		WithSleep((&sleeps{}).sleep), WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	req := core.SearchRequest{ProjectID: "acme", Query: "x"}
	if _, err := s.Search(t.Context(), req); !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("first search: %v", err)
	}
	if _, err := s.Search(t.Context(), req); !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("search during cooldown: %v", err)
	}
	if n := len(rc.requests()); n != 2 {
		t.Fatalf("requests = %d, want 2 (none during the cooldown)", n)
	}
	now = now.Add(DefaultCooldown + time.Second)
	if _, err := s.Search(t.Context(), req); err != nil {
		t.Fatalf("search after the cooldown: %v", err)
	}
}
