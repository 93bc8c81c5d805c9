package exec

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/deeplaked/deeplaked/types"
)

// TestSelectRows checks both of selectRows' ways (jumping between the few
// rows that pass, and the plain loop) against the definition: a row
// passes when its value is true and not NULL.
func TestSelectRows(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, density := range []float64{0, 0.001, 0.01, 0.05, 0.5, 1} {
		for _, nullRate := range []float64{0, 0.1} {
			n := 1 + r.IntN(3000)
			pred := types.NewVec(types.TypBool, n)
			for range n {
				switch {
				case r.Float64() < nullRate:
					pred.AppendNull()
				default:
					pred.AppendBool(r.Float64() < density)
				}
			}
			if nullRate > 0 && n > 1 {
				// A NULL whose value slot holds true must not pass.
				pred.Nulls[n/2], pred.Bools[n/2] = true, true
			}
			var want []int
			for i := range n {
				if !pred.Nulls[i] && pred.Bools[i] {
					want = append(want, i)
				}
			}
			got := selectRows([]int{-1}, pred, n)
			if got[0] != -1 || !slices.Equal(got[1:], want) {
				t.Fatalf("density %v, nulls %v, n %d: got %v, want %v", density, nullRate, n, got, want)
			}
		}
	}
}
