package vector

// Batch kernels compute one distance per row of a row-major block: data
// holds len(out) rows of dim values back to back (the layout of a vector(dim)
// column chunk), and out[i] receives the distance between q and row i. The
// caller owns out and reuses it from chunk to chunk; nothing is allocated.
// Each panics if len(q) != dim or data holds fewer than len(out) rows.

// DotBatch stores in out[i] the inner product of q and row i of data.
func DotBatch(q, data []float32, dim int, out []float32) {
	checkBatch(q, len(data), dim, len(out))
	if useAVX2 {
		dotBatchAVX2(q, data, dim, out)
		return
	}
	for i := range out {
		out[i] = dotGeneric(q, data[i*dim:(i+1)*dim])
	}
}

// L2SqBatch stores in out[i] the squared Euclidean distance between q and
// row i of data.
func L2SqBatch(q, data []float32, dim int, out []float32) {
	checkBatch(q, len(data), dim, len(out))
	if useAVX2 {
		l2sqBatchAVX2(q, data, dim, out)
		return
	}
	for i := range out {
		out[i] = l2sqGeneric(q, data[i*dim:(i+1)*dim])
	}
}

// L1Batch stores in out[i] the taxicab distance between q and row i of data.
func L1Batch(q, data []float32, dim int, out []float32) {
	checkBatch(q, len(data), dim, len(out))
	if useAVX2 {
		l1BatchAVX2(q, data, dim, out)
		return
	}
	for i := range out {
		out[i] = l1Generic(q, data[i*dim:(i+1)*dim])
	}
}

// CosineDistanceBatch stores in out[i] the cosine distance between q and row
// i of data, with CosineDistance's semantics; the query's norm is computed
// once per call.
func CosineDistanceBatch(q, data []float32, dim int, out []float32) {
	checkBatch(q, len(data), dim, len(out))
	qq := float64(SquaredNorm(q))
	if useAVX2 {
		cosBatchAVX2(q, data, dim, qq, out)
		return
	}
	for i := range out {
		ab, _, bb := cosGeneric(q, data[i*dim:(i+1)*dim])
		out[i] = cosineFinish(ab, qq*float64(bb))
	}
}

func checkBatch(q []float32, dataLen, dim, rows int) {
	if dim < 0 || len(q) != dim {
		panic("vector: query length differs from dim")
	}
	if rows > 0 && dim > 0 && dataLen/dim < rows {
		panic("vector: data holds fewer rows than out")
	}
}
