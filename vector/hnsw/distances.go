package hnsw

import "sync/atomic"

// Distances computes the distance (the metric's SQL operator's value, as
// Search reports it) from q to the stored vector of each of ids: dist[i]
// for ids[i], with found[i] reporting whether ids[i] is live in the index;
// dist[i] is left alone where it is not. dist and found must be as long as
// ids. It reads the vectors the index keeps, so a caller that already
// knows which rows it wants (those passing a selective filter) ranks them
// exactly without fetching them from elsewhere.
//
// It allocates nothing once the pooled scratch is warm and may run
// concurrently with Add and Delete.
func (x *Index) Distances(q []float32, ids []uint64, dist []float32, found []bool) error {
	s := x.pool.get()
	defer x.pool.put(s)
	if cap(s.q) < x.cfg.Dim {
		s.q = make([]float32, x.cfg.Dim)
	}
	q, _, err := x.prepare(q, s.q)
	if err != nil {
		return err
	}
	// Node numbers first, under the id map's lock, then the distances
	// under the arenas' shared lock.
	s.nbrs = s.nbrs[:0]
	x.allocMu.Lock()
	for i, id := range ids {
		n, ok := x.byID[id]
		found[i] = ok
		s.nbrs = append(s.nbrs, n)
	}
	x.allocMu.Unlock()
	x.growMu.RLock()
	defer x.growMu.RUnlock()
	for i, n := range s.nbrs {
		// A node allocated but not yet written (an Add in progress) is
		// not there yet.
		found[i] = found[i] && atomic.LoadUint32(&x.state[n])&stateReady != 0
		if found[i] {
			dist[i] = reported(x.cfg.Metric, x.dist(q, x.vec(n)))
		}
	}
	return nil
}

// Vectors copies the stored vector of each of ids into dst[i*Dim:], with
// found[i] reporting whether ids[i] is live in the index. Under Cosine the
// stored vectors are the normalized ones. dst must hold len(ids)*Dim
// values and found len(ids).
func (x *Index) Vectors(ids []uint64, dst []float32, found []bool) {
	d := x.cfg.Dim
	x.growMu.RLock()
	defer x.growMu.RUnlock()
	x.allocMu.Lock()
	defer x.allocMu.Unlock()
	for i, id := range ids {
		n, ok := x.byID[id]
		ok = ok && atomic.LoadUint32(&x.state[n])&stateReady != 0
		found[i] = ok
		if ok {
			copy(dst[i*d:(i+1)*d], x.vec(n))
		}
	}
}
