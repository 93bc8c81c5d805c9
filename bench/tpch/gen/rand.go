package gen

import (
	"math/bits"
	"math/rand/v2"
)

// A stream is one sequence of random numbers: PCG-DXSM, whose output for a
// seed is fixed whatever the platform, with the bounded draws defined
// here rather than by rand.Rand so that no library change moves them.
//
// Every column of every table draws from its own stream, and the rows of a
// table are cut into chunks of chunkRows rows each seeding its streams
// afresh from (table, column, chunk): a chunk's rows depend on nothing
// but these, so chunks can be made in any order and by any number of
// goroutines, and a change to one column leaves the others as they were.
type stream struct {
	pcg rand.PCG
}

// mix is SplitMix64's finalizer: it spreads consecutive seeds apart.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// seed sets s to the stream of (table, column) in chunk.
func (s *stream) seed(table, column int, chunk int64) {
	s.pcg.Seed(mix(uint64(table)<<16|uint64(column)), mix(uint64(chunk)^0x5450432d48))
}

// intn returns a number in [0, n), n > 0, without bias (Lemire's method).
func (s *stream) intn(n uint64) uint64 {
	hi, lo := bits.Mul64(s.pcg.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(s.pcg.Uint64(), n)
		}
	}
	return hi
}

// between returns a number in [lo, hi], uniformly.
func (s *stream) between(lo, hi int64) int64 {
	return lo + int64(s.intn(uint64(hi-lo+1)))
}
