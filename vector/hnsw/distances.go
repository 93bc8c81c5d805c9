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
	x.eachStored(ids, found, func(i int, v []float32) {
		dist[i] = reported(x.cfg.Metric, x.dist(q, v))
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
// each of ids that is live in the index, and sets found accordingly. A
// node allocated but not yet written (an Add in progress) is not there
// yet. fn runs under the index's locks and must not call into it.
func (x *Index) eachStored(ids []uint64, found []bool, fn func(i int, v []float32)) {
	x.growMu.RLock()
	defer x.growMu.RUnlock()
	x.allocMu.Lock()
	defer x.allocMu.Unlock()
	for i, id := range ids {
		n, ok := x.byID[id]
		ok = ok && atomic.LoadUint32(&x.state[n])&stateReady != 0
		found[i] = ok
		if ok {
			fn(i, x.vec(n))
		}
	}
}
