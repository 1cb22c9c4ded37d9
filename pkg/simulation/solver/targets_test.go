package solver

import (
	"math"
	"math/rand"
	"testing"
)

// TestTypeSearchMatchesScan: the indexed search (blocks, positions of types offering scarce resources,
// price caps, including prices several types share) finds the same type as trying every type in order.
func TestTypeSearchMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for round := range 200 {
		n := 1 + rng.Intn(300)
		types := make([]pricedType, n)
		price := 0.0
		for i := range types {
			if rng.Intn(4) > 0 { // some types cost the same as the one before
				price += rng.Float64()
			}
			alloc := vec{int64(1 + rng.Intn(64)), int64(1 + rng.Intn(512)), 0}
			if rng.Intn(10) == 0 { // a few types offer the scarce resource
				alloc[2] = int64(1 + rng.Intn(8))
			}
			types[i] = pricedType{typeOption: &typeOption{alloc: alloc}, price: price}
		}
		indexList(types)
		for range 50 {
			used := vec{int64(rng.Intn(32)), int64(rng.Intn(256)), int64(rng.Intn(3))}
			extra := vec{int64(rng.Intn(32)), int64(rng.Intn(256)), int64(rng.Intn(3))}
			from := rng.Intn(n + 1)
			limit := math.Inf(1)
			if rng.Intn(2) == 0 {
				limit = rng.Float64() * price
				if rng.Intn(2) == 0 { // exactly some type's price
					limit = types[rng.Intn(n)].price
				}
			}
			want := -1
			for i := from; i < n; i++ {
				if used.fitsWith(extra, types[i].alloc) {
					if types[i].price < limit {
						want = i
					}
					break
				}
			}
			if got := fitTypeBelow(types, from, used, extra, limit); got != want {
				t.Fatalf("round %d: fitTypeBelow(from %d, used %v, extra %v, limit %.2f) = %d, a scan finds %d", round, from, used, extra, limit, got, want)
			}
		}
	}
}
