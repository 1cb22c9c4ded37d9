package solver

import (
	"math/rand"
	"slices"
	"testing"
)

// TestUndominatedKeepsWeightedMaximum: for positive weights, the largest weighted sum over the points
// undominated keeps is the largest over all the points, bit for bit (the mix bound must not change).
func TestUndominatedKeepsWeightedMaximum(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for round := range 500 {
		dims := 1 + rng.Intn(4)
		points := make([][]float64, 1+rng.Intn(200))
		for i := range points {
			points[i] = make([]float64, dims)
			for d := range points[i] {
				points[i][d] = float64(rng.Intn(6)) * rng.Float64() // ties and zeros are common
			}
			if i > 0 && rng.Intn(5) == 0 { // exact duplicates too
				points[i] = slices.Clone(points[rng.Intn(i)])
			}
		}
		kept := undominated(points)
		for range 20 {
			w := make([]float64, dims)
			for d := range w {
				w[d] = rng.ExpFloat64()
			}
			if got, want := weightedBound(kept, w, w), weightedBound(points, w, w); got != want {
				t.Fatalf("round %d: bound over the %d undominated points %v, over all %d points %v", round, len(kept), got, len(points), want)
			}
		}
	}
}
