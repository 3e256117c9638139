package semantic

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/memex-dev/memex/core"
)

// Normalize scales v to unit length in place and returns it. A zero (or
// non-finite) vector is returned unchanged.
func Normalize(v []float32) []float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 || math.IsInf(s, 0) || math.IsNaN(s) {
		return v
	}
	inv := 1 / math.Sqrt(s)
	for i, x := range v {
		v[i] = float32(float64(x) * inv)
	}
	return v
}

// Cosine is the cosine similarity of a and b in [-1, 1]. It is 0 when the
// lengths differ, either vector is zero, or the result is not finite.
func Cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	return cosineNorm(a, math.Sqrt(sumSquares(a)), b)
}

// sumSquares is Σ x², accumulated in float64.
func sumSquares(a []float32) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		x0, x1, x2, x3 := float64(a[i]), float64(a[i+1]), float64(a[i+2]), float64(a[i+3])
		s0 += x0 * x0
		s1 += x1 * x1
		s2 += x2 * x2
		s3 += x3 * x3
	}
	for ; i < len(a); i++ {
		s0 += float64(a[i]) * float64(a[i])
	}
	return s0 + s1 + s2 + s3
}

// cosineNorm is Cosine(a, b) given an = ‖a‖ (the query's norm is computed
// once per Rerank). len(a) == len(b) > 0.
func cosineNorm(a []float32, an float64, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 || an == 0 {
		return 0
	}
	b = b[:len(a)]
	var d0, d1, d2, d3, n0, n1, n2, n3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		y0, y1, y2, y3 := float64(b[i]), float64(b[i+1]), float64(b[i+2]), float64(b[i+3])
		d0 += float64(a[i]) * y0
		d1 += float64(a[i+1]) * y1
		d2 += float64(a[i+2]) * y2
		d3 += float64(a[i+3]) * y3
		n0 += y0 * y0
		n1 += y1 * y1
		n2 += y2 * y2
		n3 += y3 * y3
	}
	for ; i < len(a); i++ {
		y := float64(b[i])
		d0 += float64(a[i]) * y
		n0 += y * y
	}
	bn := n0 + n1 + n2 + n3
	if bn == 0 {
		return 0
	}
	c := (d0 + d1 + d2 + d3) / (an * math.Sqrt(bn))
	switch {
	case math.IsNaN(c):
		return 0
	case c > 1:
		return 1
	case c < -1:
		return -1
	}
	return c
}

// Encode packs v as little-endian IEEE-754 float32s (4 bytes per dimension),
// the form a store keeps next to a QA.
func Encode(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// Decode is the inverse of Encode. A length that is not a multiple of 4 is
// an error wrapping core.ErrInvalid.
func Decode(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("semantic: decode vector: %d bytes is not a multiple of 4: %w", len(b), core.ErrInvalid)
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}
