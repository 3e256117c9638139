package semantic

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/memex-dev/memex/core"
)

// FuzzDecodeEmbeddings: never a panic; a success holds exactly n finite,
// non-empty vectors of one length; a failure wraps core.ErrInvalid and does
// not quote the body.
func FuzzDecodeEmbeddings(f *testing.F) {
	f.Add([]byte(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-0.2,0.3]}],"model":"m"}`), 1)
	f.Add([]byte(`{"data":[{"index":1,"embedding":[1,2]},{"index":0,"embedding":[3,4]}]}`), 2)
	f.Add([]byte(`{"data":[{"embedding":[1]},{"embedding":[2]}]}`), 2)
	f.Add([]byte(`{"data":[{"index":0,"embedding":"AACAPwAAAEA="}]}`), 1)
	f.Add([]byte(`{"data":[{"index":0,"embedding":[1e39]}]}`), 1)
	f.Add([]byte(`{"data":[{"index":-1,"embedding":[1]}]}`), 1)
	f.Add([]byte(`{"error":{"message":"x"}}`), 0)
	f.Add([]byte(`null`), 0)
	f.Fuzz(func(t *testing.T, body []byte, n int) {
		if n < 0 || n > 1<<16 {
			return
		}
		vs, err := DecodeEmbeddings(body, n)
		if err != nil {
			if !errors.Is(err, core.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			if len(body) > 8 && len(err.Error()) > 0 && containsBytes(err.Error(), body) {
				t.Fatalf("error quotes the body: %v", err)
			}
			return
		}
		if len(vs) != n {
			t.Fatalf("%d vectors for n=%d", len(vs), n)
		}
		for i, v := range vs {
			if len(v) == 0 || len(v) != len(vs[0]) {
				t.Fatalf("vector %d has %d dims, vector 0 has %d", i, len(v), len(vs[0]))
			}
			for _, x := range v {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					t.Fatalf("vector %d holds %v", i, x)
				}
			}
		}
	})
}

func containsBytes(s string, b []byte) bool {
	return len(b) <= len(s) && len(b) > 0 && strings.Contains(s, string(b))
}
