package ivf

import "fmt"

// Distances computes the distance (the metric's SQL operator's value, as
// Search reports it) from q to the stored vector of each of ids: dist[i]
// for ids[i], with found[i] reporting whether ids[i] is live in the index;
// dist[i] is left alone where it is not. dist and found must be as long as
// ids. A caller that already knows which rows it wants (those passing a
// selective filter) so ranks them exactly from the vectors the lists hold.
//
// It holds the id map while it reads, so mutations wait for it; searches
// do not.
func (x *Index) Distances(q []float32, ids []uint64, dist []float32, found []bool) error {
	if len(q) != x.cfg.Dim {
		return fmt.Errorf("%w: got %d, index has %d", ErrDimension, len(q), x.cfg.Dim)
	}
	if !finite(q) {
		return ErrInvalidVector
	}
	s := x.getScratch()
	defer x.putScratch(s)
	if x.cfg.Metric == Cosine {
		normalize(s.q[:x.cfg.Dim], q)
		q = s.q[:x.cfg.Dim]
	}
	one := s.dists[:1]
	x.eachStored(ids, found, func(i int, v []float32) {
		rowDists(x.cfg.Metric, q, v, x.cfg.Dim, one)
		dist[i] = reported(x.cfg.Metric, one[0])
	})
	return nil
}

// Vectors copies the stored vector of each of ids into dst[i*Dim:], with
// found[i] reporting whether ids[i] is live in the index. Under Cosine the
// stored vectors are the normalized ones. dst must hold len(ids)*Dim
// values and found len(ids).
func (x *Index) Vectors(ids []uint64, dst []float32, found []bool) {
	d := x.cfg.Dim
	x.eachStored(ids, found, func(i int, v []float32) {
		copy(dst[i*d:(i+1)*d], v)
	})
}

// eachStored calls fn with the position in ids and the stored vector of
// each of ids that is live in the index, and sets found accordingly. It
// takes the locks in their order (the list set, the id map, each list)
// and holds the id map throughout; fn must not call into the index.
func (x *Index) eachStored(ids []uint64, found []bool, fn func(i int, v []float32)) {
	d := x.cfg.Dim
	x.mu.RLock()
	defer x.mu.RUnlock()
	x.idMu.Lock()
	defer x.idMu.Unlock()
	for i, id := range ids {
		at, ok := x.byID[id]
		found[i] = ok
		if !ok {
			continue
		}
		l := x.lists[at.list]
		l.mu.RLock()
		fn(i, l.vecs[int(at.slot)*d:int(at.slot+1)*d])
		l.mu.RUnlock()
	}
}
