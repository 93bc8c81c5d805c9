// Package hnsw is an in-memory Hierarchical Navigable Small World graph
// (Malkov and Yashunin, 2016) for approximate nearest-neighbour search over
// float32 vectors. It backs CREATE INDEX ... USING hnsw with pgvector's
// parameters and semantics:
//
//   - m (default 16) neighbours per node on the upper layers, 2*m on layer 0;
//   - ef_construction (default 64) candidates kept while inserting;
//   - ef_search (default 40, hnsw.ef_search) candidates kept while searching;
//   - node levels drawn as floor(-ln(U) * mL) with mL = 1/ln(m);
//   - neighbours chosen with the paper's heuristic (algorithm 4), a candidate
//     being kept when it is closer to the new node than to every neighbour
//     already kept, and pruned candidates filling the remaining slots;
//   - vector_cosine_ops normalizes vectors on insert and at query time and
//     leaves zero vectors out of the index (they have no direction);
//   - vector_l1_ops (pgvector 0.7 and later) orders by the taxicab distance.
//
// One departure: a vector_ip_ops graph is linked by Euclidean distance in the
// space of the reduction of inner-product search to nearest-neighbour search
// rather than by -dot, so that every vector stays reachable (see
// ipBuildDistance); searches still order by -dot.
//
// The index is safe for concurrent use: Add, Delete and Search may run from
// many goroutines at once. Neighbour lists are guarded by striped mutexes, as
// hnswlib guards them with per-node locks, so a build runs on all cores
// (AddBatch).
//
// Deletion is a tombstone: a deleted node keeps routing searches through the
// graph but never appears in results. Filtered search traverses every node
// but collects only those that pass the filter, and keeps widening until it
// holds ef matches (see Search for the cost).
//
// Memory: vectors live in one contiguous []float32 arena, neighbour lists in
// flat []uint32 arenas (layer 0 in fixed slots, upper layers packed by node),
// so a node costs about 4*dim + 4*(2m+1) + 13 bytes plus its upper layers.
//
// WriteTo and Read store and load the graph in a versioned, checksummed
// binary format (see persist.go); loading copies arenas and rebuilds nothing.
package hnsw
