// Package stream reads deeplaked's tensor stream (COPY ... TO STDOUT WITH
// (FORMAT tensor, ...), specified in docs/tensor-stream.md) over a pgconn
// connection and yields its batches as typed Go slices.
//
//	batches, err := stream.Stream(ctx, conn, "SELECT embedding, label FROM samples",
//		stream.Options{BatchSize: 64, Shuffle: true, Seed: 7})
//	if err != nil { ... }
//	defer batches.Close()
//	for batches.Next() {
//		b := batches.Batch()
//		emb := b.Column("embedding").Float32() // rows × dims, row-major
//		lab := b.Column("label").Int32()
//		...
//	}
//	if err := batches.Err(); err != nil { ... } // a server error is a *pgconn.PgError
//
// or, with a range loop, for b, err := range batches.All() { ... }.
//
// A reading goroutine runs the COPY on the connection's socket itself
// (pgconn.PgConn.SyncConn hands it over between pgconn's operations) and
// reads each CopyData message (one frame, one batch) straight from the
// socket into one of two reused 64-byte aligned buffers: the kernel's copy
// is the only one, and each column's buffer is wrapped in place as a
// []float32, []int64, ... without parsing rows. The goroutine waits while
// the consumer holds the other buffer: at most one frame is read ahead
// (backpressure, not a queue). pgconn does not see the rest of the COPY's
// answer: a ParameterStatus or a notice during the stream does not reach
// it, and its TxStatus is the one from before the stream.
//
// On the server's machine, over its Unix socket (pgconn's host set to the
// server's --unix-socket-dir), Options.SharedMemory asks the server to
// write the frames into a memory area it shares with this process
// (SHARED_MEMORY); each batch's columns are then views of that area, the
// frame copied once, by the server, and the socket carries a 40-byte
// reference per batch. Next hands the previous batch's frame back to the
// server. Frames that do not fit the area still come through the socket.
//
// Shards of one epoch that must agree on a table being written to read
// one snapshot: each names the epoch (Options.Epoch, the server's EPOCH
// option), and the first statement's snapshot is the others'. Or the
// stream runs inside a transaction block: each shard's connection runs
// BEGIN ISOLATION LEVEL REPEATABLE READ; SET TRANSACTION SNAPSHOT 'id'
// first, id from one session's SELECT pg_export_snapshot() (docs/sql.md).
//
// NB: a Batch and every slice taken from it are borrowed: they are valid
// until the next call to Next or Close. Copy what must outlive that.
package stream
