package gatekeeper

import (
	"math"
	"math/rand/v2"
)

// BetaSample draws θ ~ Beta(a, b) from rng, as X/(X+Y) with X ~ Gamma(a),
// Y ~ Gamma(b). Shapes that are not positive and finite are treated as 1.
func BetaSample(rng *rand.Rand, a, b float64) float64 {
	x := gammaSample(rng, a)
	y := gammaSample(rng, b)
	if x+y == 0 {
		// Both underflowed (tiny shapes): the mass sits at 0 or 1.
		if rng.Float64() < a/(a+b) {
			return 1
		}
		return 0
	}
	return x / (x + y)
}

// gammaSample draws from Gamma(shape, 1) by Marsaglia and Tsang's method
// ("A simple method for generating gamma variables", 2000); shape < 1 uses
// the boost Gamma(k) = Gamma(k+1)·U^(1/k).
func gammaSample(rng *rand.Rand, shape float64) float64 {
	if !(shape > 0) || math.IsInf(shape, 0) {
		shape = 1
	}
	if shape < 1 {
		u := rng.Float64()
		for u == 0 {
			u = rng.Float64()
		}
		return gammaSample(rng, shape+1) * math.Pow(u, 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		var x, v float64
		for {
			x = rng.NormFloat64()
			v = 1 + c*x
			if v > 0 {
				break
			}
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x {
			return d * v
		}
		if u > 0 && math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
