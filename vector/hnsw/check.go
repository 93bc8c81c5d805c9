package hnsw

import (
	"fmt"
	"sync/atomic"
)

// check verifies the graph's invariants: every list within its size, every
// neighbour a ready node on that layer, no self links or repeats, the entry
// point on the top layer and the id map consistent with the tombstones. It
// is used by Read on loaded data and by tests after concurrent builds; it
// must not run concurrently with Add.
func (x *Index) check() error {
	x.growMu.RLock()
	defer x.growMu.RUnlock()
	n := int(x.n.Load())
	if n == 0 {
		if x.entry != -1 {
			return fmt.Errorf("empty index with entry point %d", x.entry)
		}
		return nil
	}
	if x.entry < 0 || int(x.entry) >= n || int(x.levels[x.entry]) != x.top {
		return fmt.Errorf("entry point %d with top level %d", x.entry, x.top)
	}
	seen := make([]uint64, n) // seen[nb] == stamp: nb already in this list
	stamp := uint64(0)
	deleted := 0
	for i := range n {
		node := uint32(i)
		st := atomic.LoadUint32(&x.state[i])
		if st&stateReady == 0 {
			return fmt.Errorf("node %d not ready", i)
		}
		if st&stateDeleted != 0 {
			deleted++
		} else if got, ok := x.byID[x.ids[i]]; !ok || got != node {
			return fmt.Errorf("live node %d (id %d) missing from the id map", i, x.ids[i])
		}
		lv := int(x.levels[i])
		if lv > x.top {
			return fmt.Errorf("node %d has level %d above the top %d", i, lv, x.top)
		}
		for l := 0; l <= lv; l++ {
			stamp++
			lst := x.list(node, l)
			if int(lst[0]) > x.layerM(l) {
				return fmt.Errorf("node %d layer %d: %d neighbours, limit %d", i, l, lst[0], x.layerM(l))
			}
			for _, nb := range lst[1 : 1+lst[0]] {
				switch {
				case int(nb) >= n:
					return fmt.Errorf("node %d layer %d: neighbour %d out of range", i, l, nb)
				case nb == node:
					return fmt.Errorf("node %d layer %d: links to itself", i, l)
				case int(x.levels[nb]) < l:
					return fmt.Errorf("node %d layer %d: neighbour %d has level %d", i, l, nb, x.levels[nb])
				case seen[nb] == stamp:
					return fmt.Errorf("node %d layer %d: neighbour %d twice", i, l, nb)
				}
				seen[nb] = stamp
			}
		}
	}
	if deleted != int(x.nDeleted.Load()) || n-deleted != len(x.byID) {
		return fmt.Errorf("%d tombstones, %d counted, %d live ids of %d nodes", deleted, x.nDeleted.Load(), len(x.byID), n)
	}
	return nil
}
