package httpstore

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/memex-dev/memex/core"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		raw     string
		want    Config
		wantErr string
	}{
		{"https://memex.example.com", Config{BaseURL: "https://memex.example.com"}, ""},
		{"http://127.0.0.1:8080/base/?compat=true&timeout=5s&retries=-1&cooldown=1m",
			Config{BaseURL: "http://127.0.0.1:8080/base/", Compat: true, Timeout: 5 * time.Second, Retries: -1, Cooldown: time.Minute}, ""},
		{"http://h/?compat=maybe", Config{}, "compat"},
		{"http://h/?timeout=5", Config{}, "timeout"},
		{"http://h/?retries=x", Config{}, "retries"},
		{"http://h/?api_key=s3cret", Config{}, `unknown parameter "api_key"`},
		{"https://user:s3cret@h/", Config{}, "credentials"},
		{"redis://h", Config{}, "http://"},
	}
	for _, tc := range tests {
		t.Run(tc.raw, func(t *testing.T) {
			got, err := ParseURL(tc.raw)
			if tc.wantErr != "" {
				if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("err = %v, want ErrInvalid mentioning %q (and no secret)", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if _, err := New(got); err != nil {
				t.Errorf("New(ParseURL(%q)): %v", tc.raw, err)
			}
		})
	}
}
