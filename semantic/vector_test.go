package semantic

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/memex-dev/memex/core"
)

func TestNormalize(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   []float32
		want []float32
	}{
		{name: "3-4-5", in: []float32{3, 4}, want: []float32{0.6, 0.8}},
		{name: "zero stays", in: []float32{0, 0}, want: []float32{0, 0}},
		{name: "empty", in: []float32{}, want: []float32{}},
		{name: "negative", in: []float32{0, -2}, want: []float32{0, -1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Normalize(slices.Clone(tt.in))
			for i := range got {
				if math.Abs(float64(got[i]-tt.want[i])) > 1e-6 {
					t.Fatalf("Normalize(%v) = %v, want %v", tt.in, got, tt.want)
				}
			}
		})
	}
}

func TestCosine(t *testing.T) {
	for _, tt := range []struct {
		name string
		a, b []float32
		want float64
	}{
		{name: "same", a: []float32{1, 2, 3}, b: []float32{2, 4, 6}, want: 1},
		{name: "orthogonal", a: []float32{1, 0}, b: []float32{0, 5}, want: 0},
		{name: "opposite", a: []float32{1, 1}, b: []float32{-1, -1}, want: -1},
		{name: "45 degrees", a: []float32{1, 0}, b: []float32{1, 1}, want: 1 / math.Sqrt2},
		{name: "length mismatch", a: []float32{1, 0}, b: []float32{1}, want: 0},
		{name: "zero vector", a: []float32{0, 0}, b: []float32{1, 1}, want: 0},
		{name: "empty", want: 0},
		{name: "nan", a: []float32{float32(math.NaN()), 1}, b: []float32{1, 1}, want: 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Cosine(tt.a, tt.b); math.Abs(got-tt.want) > 1e-6 {
				t.Fatalf("Cosine = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEncodeDecode(t *testing.T) {
	v := []float32{0, 1, -1.5, math.MaxFloat32, math.SmallestNonzeroFloat32, float32(math.Inf(-1))}
	b := Encode(v)
	if len(b) != 4*len(v) {
		t.Fatalf("len = %d", len(b))
	}
	// Little-endian: 1.0 is 0x3f800000 → 00 00 80 3f.
	if !slices.Equal(b[4:8], []byte{0, 0, 0x80, 0x3f}) {
		t.Fatalf("1.0 encoded as % x, want 00 00 80 3f", b[4:8])
	}
	got, err := Decode(b)
	if err != nil || !slices.Equal(got, v) {
		t.Fatalf("Decode(Encode(v)) = %v, %v; want %v", got, err, v)
	}
	if _, err := Decode([]byte{1, 2, 3}); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("Decode(3 bytes) err = %v, want ErrInvalid", err)
	}
	if got, err := Decode(nil); err != nil || len(got) != 0 {
		t.Fatalf("Decode(nil) = %v, %v", got, err)
	}
}

func TestCache(t *testing.T) {
	c := NewCache(2)
	c.Put("m", "a", []float32{1})
	c.Put("m", "b", []float32{2})
	if _, ok := c.Get("m", "a"); !ok { // a is now most recent
		t.Fatal("a missing")
	}
	c.Put("m", "c", []float32{3}) // evicts b
	if _, ok := c.Get("m", "b"); ok {
		t.Fatal("b should have been evicted (least recently used)")
	}
	if v, ok := c.Get("m", "a"); !ok || v[0] != 1 {
		t.Fatal("a evicted instead of b")
	}
	if _, ok := c.Get("other-model", "a"); ok {
		t.Fatal("vectors of one model served for another")
	}
	c.Put("m", "a", []float32{9})
	if v, _ := c.Get("m", "a"); v[0] != 9 || c.Len() != 2 {
		t.Fatalf("update: %v len %d", v, c.Len())
	}
	if h, m := c.Stats(); h != 3 || m != 2 {
		t.Fatalf("stats = %d hits %d misses, want 3, 2", h, m)
	}
	var nilc *Cache
	nilc.Put("m", "a", nil)
	if _, ok := nilc.Get("m", "a"); ok || nilc.Len() != 0 {
		t.Fatal("nil cache must be a no-op")
	}
	if NewCache(0).size != DefaultCacheSize {
		t.Fatal("default size")
	}
}
