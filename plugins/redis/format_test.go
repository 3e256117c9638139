package redisstore

import (
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/internal/redistest"
)

// TestFormatOpen: Open marks a store without a format, or with a lower
// one, with FormatVersion and uses it; it refuses one with a higher
// format, naming both, and leaves the mark as it is.
func TestFormatOpen(t *testing.T) {
	url := redistest.URL(t)
	ctx := t.Context()
	c := redis.NewClient(mustParse(t, url))
	defer c.Close()
	want := strconv.Itoa(FormatVersion)
	for _, tc := range []struct {
		name, mark, after string
		refused           bool
	}{
		{"absent", "", want, false},
		{"lower", "1", want, false},
		{"equal", want, want, false},
		{"higher", strconv.Itoa(FormatVersion + 1), strconv.Itoa(FormatVersion + 1), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			k := keys{prefix: prefix}
			if tc.mark != "" {
				if err := c.Set(ctx, k.format(), tc.mark, 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
			s, err := Open(ctx, url, WithPrefix(prefix))
			if tc.refused {
				var fe *FormatError
				if !errors.As(err, &fe) || !errors.Is(err, core.ErrUnavailable) {
					t.Fatalf("Open of a store in format %s: %v, want a *FormatError (ErrUnavailable)", tc.mark, err)
				}
				wantMsg := "redis store at " + prefix + " is in format " + tc.mark + "; this memex reads up to " + want + ": upgrade memex"
				if err.Error() != wantMsg {
					t.Errorf("error %q, want %q", err, wantMsg)
				}
			} else {
				if err != nil {
					t.Fatalf("Open of a store in format %q: %v", tc.mark, err)
				}
				defer s.Close()
				if _, err := s.RecordCandidate(ctx, core.CandidateRequest{ProjectID: "f", Question: "which format is this store in", Answer: "the mark says"}); err != nil {
					t.Errorf("write: %v", err)
				}
			}
			if got := c.Get(ctx, k.format()).Val(); got != tc.after {
				t.Errorf("mark after Open: %q, want %q", got, tc.after)
			}
		})
	}
	t.Run("not a number", func(t *testing.T) {
		prefix := redistest.Prefix(t)
		if err := c.Set(ctx, keys{prefix: prefix}.format(), "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(ctx, url, WithPrefix(prefix)); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("Open of a store marked %q: %v, want ErrInvalid", "x", err)
		}
	})
}

// TestFormatRunning: a running store's Ping (the service's /readyz) sees
// a newer memex mark the store, and from then on its writes are refused
// too; once the mark is lower again (a server restored from an older
// snapshot), Ping writes it back and the writes resume.
func TestFormatRunning(t *testing.T) {
	s := newShared(t)
	ctx := t.Context()
	write := func() error {
		_, err := s.RecordCandidate(ctx, core.CandidateRequest{ProjectID: "run", Question: "can this process still write", Answer: "while the format allows"})
		return err
	}
	if err := write(); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.Set(ctx, s.k.format(), FormatVersion+1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	var fe *FormatError
	if err := s.Ping(ctx); !errors.As(err, &fe) || fe.Found != FormatVersion+1 || fe.Reads != FormatVersion {
		t.Fatalf("Ping of a store a newer memex marked: %v", err)
	}
	if err := write(); !errors.As(err, &fe) {
		t.Errorf("write after the refusal: %v, want a *FormatError", err)
	}
	if err := s.rdb.Del(ctx, s.k.format()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping of a store without a mark: %v", err)
	}
	if got := s.rdb.Get(ctx, s.k.format()).Val(); got != strconv.Itoa(FormatVersion) {
		t.Errorf("mark after Ping: %q", got)
	}
	if err := write(); err != nil {
		t.Errorf("write once the mark is ours again: %v", err)
	}
}

// TestFormatConcurrentOpen: processes opening one store together all
// start, and the mark is FormatVersion; the mark script never lowers a
// newer memex's mark, whatever the order.
func TestFormatConcurrentOpen(t *testing.T) {
	url := redistest.URL(t)
	prefix := redistest.Prefix(t)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			s, err := Open(t.Context(), url, WithPrefix(prefix))
			if err == nil {
				_ = s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
		}
	}
	s := openPrefix(t, url, prefix)
	if got := s.rdb.Get(t.Context(), s.k.format()).Val(); got != strconv.Itoa(FormatVersion) {
		t.Errorf("mark: %q", got)
	}
	newer := strconv.Itoa(FormatVersion + 1)
	if err := formatScript.Run(t.Context(), s.rdb, []string{s.k.format()}, newer).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := formatScript.Run(t.Context(), s.rdb, []string{s.k.format()}, FormatVersion).Text()
	if err != nil || got != newer {
		t.Errorf("the mark script over a newer mark: %q (%v), want %q kept", got, err, newer)
	}
}

func mustParse(tb testing.TB, url string) *redis.Options {
	tb.Helper()
	o, err := redis.ParseURL(url)
	if err != nil {
		tb.Fatal(err)
	}
	return o
}
