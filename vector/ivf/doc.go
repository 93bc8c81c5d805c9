// Package ivf is an in-memory inverted-file index with exact lists (IVFFlat)
// for approximate nearest-neighbour search over float32 vectors. It backs
// CREATE INDEX ... USING ivfflat with pgvector's parameters and semantics:
//
//   - lists (default 100) centroids are found by k-means on a sample of the
//     rows (pgvector samples max(50*lists, 10000) rows: SampleSize), seeded by
//     k-means++; a sample of no more rows than lists gives one list per
//     distinct row instead, so an index trained on little data has fewer
//     lists (Lists);
//   - vector_l2_ops clusters by Euclidean distance; vector_ip_ops and
//     vector_cosine_ops run spherical k-means (unit centroids, nearest by
//     angle), as pgvector's kmeans norm support function makes them;
//   - each row is stored in the list of its nearest centroid (squared
//     Euclidean distance, or -dot with the unit centroids);
//   - a search scans the probes (ivfflat.probes, default 1) lists whose
//     centroids are nearest to the query, every row of them exactly;
//   - vector_cosine_ops normalizes vectors on insert and at query time and
//     leaves zero vectors out of the index.
//
// Like pgvector 0.8's iterative index scans, a search whose probed lists hold
// fewer than k rows that pass its filter (and are not deleted) goes on to the
// next nearest lists until it has k or has scanned them all (see Search).
//
// Lists are contiguous float32 arenas scanned with the vector package's batch
// kernels. The index is safe for concurrent use: Search, Add, AddBatch and
// Delete may run from many goroutines (see Index for the locks).
//
// Deletion is a tombstone: the row stays in its list, never returned.
//
// WriteTo and Read store and load the index in a versioned, checksummed
// binary format (see persist.go).
package ivf
