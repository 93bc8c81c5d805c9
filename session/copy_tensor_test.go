package session

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/client/stream"
	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/storage"
)

// frameWriter keeps each Write (one frame) apart.
type frameWriter struct {
	recorder
	frames [][]byte
}

func (r *frameWriter) CopyOut(binary bool, ncols int) (io.Writer, error) {
	r.recorder.CopyOut(binary, ncols)
	return r, nil
}

func (r *frameWriter) Write(p []byte) (int, error) {
	r.frames = append(r.frames, bytes.Clone(p))
	return len(p), nil
}

func TestCopyToTensor(t *testing.T) {
	s := newSession(t)
	mustRun(t, s, "CREATE TABLE samples (image uint8[3][2][2], label int)", "")
	mustRun(t, s, "INSERT INTO samples (label) SELECT g FROM generate_series(1, 5) g", "INSERT 0 5")
	for q, want := range map[string]struct {
		rows   []int
		status string
	}{
		"COPY samples TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 2)":                                {[]int{2, 2, 1}, "copy out binary=true columns=2; COPY 5"},
		"COPY (SELECT label FROM samples) TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 2, DROP_LAST)": {[]int{2, 2}, "copy out binary=true columns=1; COPY 4"},
		// Five buffered rows are one row group, dealt to shard 0.
		"COPY samples TO STDOUT WITH (FORMAT tensor, SHARD '0/2', BATCH_SIZE 4)": {[]int{4, 1}, "copy out binary=true columns=2; COPY 5"},
		"COPY samples TO STDOUT WITH (FORMAT tensor, SHARD '1/2', BATCH_SIZE 4)": {nil, "copy out binary=true columns=2; COPY 0"},
		// Not a plain scan: sharded by row position.
		"COPY (SELECT label FROM samples ORDER BY label) TO STDOUT WITH (FORMAT tensor, SHARD '1/2', BATCH_SIZE 4)": {[]int{2}, "copy out binary=true columns=1; COPY 2"},
	} {
		r := &frameWriter{}
		if err := s.ExecSimple(context.Background(), q, r); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if got := join(r.out); got != want.status || len(r.frames) != len(want.rows) {
			t.Fatalf("%s: %s, %d frames", q, got, len(r.frames))
		}
		for i, f := range r.frames {
			if string(f[:4]) != "DLTF" || binary.LittleEndian.Uint64(f[16:]) != uint64(i) || int(binary.LittleEndian.Uint32(f[24:])) != want.rows[i] {
				t.Errorf("%s: frame %d header % x", q, i, f[:32])
			}
		}
	}
}

func join(out []string) string {
	s := ""
	for i, o := range out {
		if i > 0 {
			s += "; "
		}
		s += o
	}
	return s
}

// copyIDs runs a COPY of the int8 column id as a tensor stream and returns
// the ids in stream order.
func copyIDs(t *testing.T, s *Session, q string) []int64 {
	t.Helper()
	r := &frameWriter{}
	if err := s.ExecSimple(context.Background(), q, r); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	ids, _ := parseIDs(t, r.frames)
	return ids
}

// parseIDs returns the first column (int8) of the frames and the source
// of the first; no later frame may have one.
func parseIDs(t *testing.T, frames [][]byte) ([]int64, *stream.Source) {
	t.Helper()
	var ids []int64
	var src *stream.Source
	var b stream.Batch
	var buf []byte
	for i, f := range frames {
		if err := stream.ParseFrame(stream.AlignedCopy(&buf, f), &b); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			src = b.Source
		} else if b.Source != nil {
			t.Fatalf("frame %d has a source block", i)
		}
		ids = append(ids, b.Columns[0].Int64()...)
	}
	return ids, src
}

// TestCopyToTensorRowGroups streams a table of fragments and buffered
// rows, shuffled by row group and sharded.
func TestCopyToTensorRowGroups(t *testing.T) {
	db, s := openSession(t, storage.Options{InMemory: true, FlushRows: 1 << 30})
	const n = 3*storage.RowGroupRows + 123
	mustRun(t, s, "CREATE TABLE r (id bigint)", "")
	mustRun(t, s, fmt.Sprintf("INSERT INTO r SELECT g FROM generate_series(0, %d) g", n-101), fmt.Sprintf("INSERT 0 %d", n-100))
	flushAll(t, db)
	mustRun(t, s, fmt.Sprintf("INSERT INTO r SELECT g FROM generate_series(%d, %d) g", n-100, n-1), "INSERT 0 100")

	q := "COPY r TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 1000, SHUFFLE true, SHUFFLE_BUFFER 500, SEED %d, SHARD '%d/%d', START_BATCH %d)"
	a := copyIDs(t, s, fmt.Sprintf(q, 1, 0, 1, 0))
	if b := copyIDs(t, s, fmt.Sprintf(q, 1, 0, 1, 0)); !slices.Equal(a, b) || len(a) != n {
		t.Fatalf("the same seed: %d and %d rows, orders differ", len(a), len(b))
	}
	if c := copyIDs(t, s, fmt.Sprintf(q, 2, 0, 1, 0)); slices.Equal(a, c) {
		t.Fatal("seeds 1 and 2 gave the same order")
	}
	if slices.IsSorted(a) {
		t.Fatal("not shuffled")
	}
	// Sharded, the fragment's rows (its groups laid end to end in the
	// shuffled order) are cut into runs of equal length, to a row; the
	// buffered rows, one group that is not cut, go to shard 0.
	const frag = n - 100
	for world := 1; world <= 5; world++ {
		seen := make([]int, n)
		for rank := range world {
			ids := copyIDs(t, s, fmt.Sprintf(q, 9, rank, world, 0))
			want := frag*(rank+1)/world - frag*rank/world
			if rank == 0 {
				want += 100
			}
			if len(ids) != want {
				t.Fatalf("shard %d/%d: %d rows, want %d", rank, world, len(ids), want)
			}
			for _, id := range ids {
				seen[id]++
			}
		}
		for id, k := range seen {
			if k != 1 {
				t.Fatalf("world %d: row %d sent %d times", world, id, k)
			}
		}
	}
	// DROP_LAST: each shard holds ⌊rows/world⌋ of the fragment's rows (the
	// last rows of the order left out), then drops its short batch. Here
	// 49,175 rows in 4 shards are 12,293 each (not 12,293 and 12,294, which
	// would give 2,048 and 2,049 batches of 6), shard 0 holding the 100
	// buffered rows as well.
	const qd = "COPY r TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 6, SHUFFLE true, SEED 9, SHARD '%d/4', DROP_LAST true)"
	for rank := range 4 {
		want := frag / 4 / 6 * 6
		if rank == 0 {
			want = (frag/4 + 100) / 6 * 6
		}
		if ids := copyIDs(t, s, fmt.Sprintf(qd, rank)); len(ids) != want {
			t.Fatalf("shard %d/4, DROP_LAST: %d rows, want %d", rank, len(ids), want)
		}
	}
	full := copyIDs(t, s, fmt.Sprintf(q, 4, 1, 2, 0))
	if rest := copyIDs(t, s, fmt.Sprintf(q, 4, 1, 2, 3)); !slices.Equal(full[3000:], rest) {
		t.Fatalf("START_BATCH 3: %d rows, want the last %d", len(rest), len(full)-3000)
	}
	// Without SHUFFLE, sharded: each shard reads its run of the table in
	// order. The fragment's groups are [0, 16384), [16384, 32768),
	// [32768, 49152), [49152, 49175), then the buffered rows: shard 1 of 2
	// reads fragment rows [24587, 49175), part of the second group and the
	// two after it.
	ids := copyIDs(t, s, "COPY r TO STDOUT WITH (FORMAT tensor, SHARD '1/2')")
	if len(ids) != frag-frag/2 || ids[0] != frag/2 || !slices.IsSorted(ids) {
		t.Fatalf("shard 1/2 unshuffled: %d rows from %d", len(ids), ids[0])
	}
}

func TestCopyToTensorVersion(t *testing.T) {
	db, s := openSession(t, storage.Options{InMemory: true})
	mustRun(t, s, "CREATE TABLE v (id bigint)", "")
	mustRun(t, s, "INSERT INTO v SELECT g FROM generate_series(0, 9) g", "INSERT 0 10")
	vs, err := db.Versions("v")
	if err != nil || len(vs) == 0 {
		t.Fatal(vs, err)
	}
	first := vs[len(vs)-1].Version
	mustRun(t, s, "SELECT deeplake_tag('v', 'ten')", "columns deeplake_tag:text; ten; SELECT 1")
	mustRun(t, s, "INSERT INTO v SELECT g FROM generate_series(10, 14) g", "INSERT 0 5")
	mustRun(t, s, "DELETE FROM v WHERE id < 3", "DELETE 3")
	if ids := copyIDs(t, s, fmt.Sprintf("COPY v TO STDOUT WITH (FORMAT tensor, VERSION %d)", first)); !slices.Equal(ids, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Errorf("VERSION %d: %v", first, ids)
	}
	if ids := copyIDs(t, s, fmt.Sprintf("COPY (SELECT id, id AS again FROM v WHERE id > 4) TO STDOUT WITH (FORMAT tensor, VERSION %d)", first)); !slices.Equal(ids, []int64{5, 6, 7, 8, 9}) {
		t.Errorf("single-table query, VERSION %d: %v", first, ids)
	}
	if ids := copyIDs(t, s, "COPY v TO STDOUT WITH (FORMAT tensor)"); len(ids) != 12 {
		t.Errorf("current version: %v", ids)
	}
	// A named version: the tag made before the writes.
	if ids := copyIDs(t, s, "COPY v TO STDOUT WITH (FORMAT tensor, VERSION 'ten')"); !slices.Equal(ids, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Errorf("VERSION 'ten': %v", ids)
	}
	// The first frame names what the stream read: a commit of it, made
	// for the stream (the table moved on since the last), then reused.
	r := &frameWriter{}
	if err := s.ExecSimple(context.Background(), "COPY v TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 5)", r); err != nil {
		t.Fatal(err)
	}
	ids, src := parseIDs(t, r.frames)
	if len(ids) != 12 || src == nil || len(src.Commit) != 12 || src.Branch != "" || src.Version == 0 {
		t.Fatalf("stream of %d rows, source %+v", len(ids), src)
	}
	if ids := copyIDs(t, s, "COPY v TO STDOUT WITH (FORMAT tensor, VERSION '"+src.Commit+"')"); len(ids) != 12 {
		t.Fatalf("VERSION of the stream's commit: %v", ids)
	}
	// A version named in the query: "v@ref" and deeplake_at stream too.
	if ids := copyIDs(t, s, `COPY (SELECT * FROM "v@ten" WHERE id > 4) TO STDOUT WITH (FORMAT tensor)`); !slices.Equal(ids, []int64{5, 6, 7, 8, 9}) {
		t.Errorf(`"v@ten": %v`, ids)
	}
	if ids := copyIDs(t, s, `COPY (SELECT id FROM deeplake_at('v', 'ten')) TO STDOUT WITH (FORMAT tensor, SHUFFLE true, SEED 3)`); len(ids) != 10 {
		t.Errorf(`deeplake_at('v', 'ten'), shuffled: %v`, ids)
	}
	r = &frameWriter{}
	mustRun(t, s, "SELECT deeplake_branch('v', 'dev')", "columns deeplake_branch:text; dev; SELECT 1")
	if err := s.ExecSimple(context.Background(), "COPY (SELECT id FROM v WHERE id > 10) TO STDOUT WITH (FORMAT tensor, VERSION 'dev')", r); err != nil {
		t.Fatal(err)
	}
	if ids, again := parseIDs(t, r.frames); len(ids) != 4 || again == nil || again.Branch != "dev" || again.Commit != src.Commit {
		t.Fatalf("the branch's stream: %v, source %+v (the main's %+v)", ids, again, src)
	}
	for q, code := range map[string]pgerror.Code{
		"COPY v TO STDOUT WITH (FORMAT tensor, VERSION 'no-such-tag')":            pgerror.UndefinedObject,
		"COPY v TO STDOUT WITH (FORMAT tensor, VERSION 999)":                      pgerror.InvalidParameterValue,
		"COPY (SELECT count(*) FROM v) TO STDOUT WITH (FORMAT tensor, VERSION 1)": pgerror.FeatureNotSupported,
	} {
		r := &frameWriter{}
		err := s.ExecSimple(context.Background(), q, r)
		if pgerror.GetCode(err) != code || len(r.frames) != 0 {
			t.Errorf("%s: %v (%s), %d frames", q, err, pgerror.GetCode(err), len(r.frames))
		}
	}
}

// failingWriter fails every write after the first, as a connection whose
// client has gone away.
type failingWriter struct {
	recorder
	writes int
}

func (w *failingWriter) CopyOut(bool, int) (io.Writer, error) { return w, nil }

func (w *failingWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.writes > 1 {
		return 0, io.ErrClosedPipe
	}
	return len(p), nil
}

// TestCopyToTensorStops checks that a cancel or a failed write ends the
// stream at once, with every scan closed (the storage's open iterators
// would keep the DB from closing cleanly otherwise).
func TestCopyToTensorStops(t *testing.T) {
	s := newSession(t)
	mustRun(t, s, "CREATE TABLE c (id bigint, s text)", "")
	mustRun(t, s, "INSERT INTO c SELECT g, 'x' FROM generate_series(1, 20000) g", "INSERT 0 20000")
	for _, q := range []string{
		"COPY c TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 10)",
		"COPY c TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 10, SHUFFLE true, SHARD '0/1', SHUFFLE_BUFFER 100)",
		"COPY (SELECT id FROM c ORDER BY id DESC) TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 10, SHUFFLE 'exact')",
	} {
		ctx, cancel := context.WithCancel(context.Background())
		cr := &cancelRecorder{w: &cancelingWriter{cancel: cancel}}
		if err := s.ExecSimple(ctx, q, cr); pgerror.GetCode(err) != pgerror.QueryCanceled || cr.w.n > 200 {
			t.Errorf("%s canceled: %v after %d frames", q, err, cr.w.n)
		}
		cancel()
		fw := &failingWriter{}
		if err := s.ExecSimple(context.Background(), q, fw); err == nil || fw.writes != 2 {
			t.Errorf("%s, client gone: %v after %d writes", q, err, fw.writes)
		}
	}
	// The session still works.
	mustRun(t, s, "SELECT count(*) FROM c", "columns count:bigint; 20000; SELECT 1")
}

// TestCopyToTensorExample checks the example of docs/tensor-stream.md.
func TestCopyToTensorExample(t *testing.T) {
	s := newSession(t)
	mustRun(t, s, "CREATE TABLE samples (image uint8[3][2][2], label int)", "")
	mustRun(t, s, "INSERT INTO samples VALUES ('{{{1,2},{3,4}},{{5,6},{7,8}},{{9,10},{11,12}}}', 7), ('{{{0,0},{0,0}},{{0,0},{0,0}},{{0,0},{0,0}}}', -1)", "INSERT 0 2")
	r := &frameWriter{}
	if err := s.ExecSimple(context.Background(), "COPY (SELECT image, label FROM samples) TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 2)", r); err != nil || len(r.frames) != 1 {
		t.Fatalf("%v, %d frames", err, len(r.frames))
	}
	f := r.frames[0]
	le := binary.LittleEndian
	imgDesc := 32 + 2 + 5 + 4 + 12
	lblDesc := 32 + 87 + 2 + 5 + 4
	// The header: 194 bytes, then the source block (version, commit id,
	// no branch) of 8 + 2 + 12 + 2 bytes.
	if le.Uint32(f[8:]) != 194+24 || len(f) != 384 || le.Uint16(f[6:]) != 1 ||
		le.Uint64(f[imgDesc+48:]) != 256 || le.Uint64(f[imgDesc+56:]) != 24 ||
		le.Uint64(f[lblDesc+48:]) != 320 || le.Uint64(f[lblDesc+56:]) != 8 {
		t.Fatalf("header_len %d, %d bytes, image at %d (%d), label at %d (%d)", le.Uint32(f[8:]), len(f),
			le.Uint64(f[imgDesc+48:]), le.Uint64(f[imgDesc+56:]), le.Uint64(f[lblDesc+48:]), le.Uint64(f[lblDesc+56:]))
	}
	if f[256] != 1 || f[256+11] != 12 || int32(le.Uint32(f[320:])) != 7 || int32(le.Uint32(f[324:])) != -1 {
		t.Fatalf("values % x / % x", f[256:280], f[320:328])
	}
}

// TestCopyToTensorStartBatchSkips resumes an in-order stream at a batch
// past two whole row groups: the rows are those the full stream sends
// from there, and the skipped groups are not read. With a deleted row the
// groups' counts are not their rows, so they are read and skipped row by
// row, with the same result.
func TestCopyToTensorStartBatchSkips(t *testing.T) {
	db, s := openSession(t, storage.Options{InMemory: true, FlushRows: 1 << 30, NoCompaction: true})
	const n = 4 * storage.RowGroupRows
	mustRun(t, s, "CREATE TABLE r (id bigint, pad bigint) WITH (chunk_size = '64kB')", "")
	mustRun(t, s, fmt.Sprintf("INSERT INTO r SELECT g, g * 7 FROM generate_series(0, %d) g", n-1), fmt.Sprintf("INSERT 0 %d", n))
	flushAll(t, db)
	const q = "COPY r TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 1000, START_BATCH %d)"
	start := (2*storage.RowGroupRows + 500) / 1000 // past two groups, into the third
	chunks := func(f func()) int64 {
		before := db.Stats().ChunksRead.Load()
		f()
		return db.Stats().ChunksRead.Load() - before
	}
	var full, rest []int64
	fullRead := chunks(func() { full = copyIDs(t, s, fmt.Sprintf(q, 0)) })
	restRead := chunks(func() { rest = copyIDs(t, s, fmt.Sprintf(q, start)) })
	if len(full) != n || !slices.Equal(full[start*1000:], rest) {
		t.Fatalf("START_BATCH %d: %d rows, want the last %d of %d", start, len(rest), n-start*1000, len(full))
	}
	if restRead >= fullRead {
		t.Fatalf("START_BATCH %d read %d chunks, the whole stream %d: the skipped groups were read", start, restRead, fullRead)
	}
	// A shard in order: its run of the groups; it skips its own.
	const qs = "COPY r TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 1000, SHARD '1/2', START_BATCH %d)"
	shard := copyIDs(t, s, fmt.Sprintf(qs, 0))
	if rest := copyIDs(t, s, fmt.Sprintf(qs, 17)); len(shard) != n/2 || !slices.Equal(shard[17000:], rest) {
		t.Fatalf("SHARD 1/2, START_BATCH 17: %d rows, want the last %d of %d", len(rest), len(shard)-17000, len(shard))
	}
	// With a deleted row, or a WHERE, a group's range is not its count of
	// rows sent: the skipped groups are counted from their row ids and
	// the filter's columns, and their other columns are not read.
	mustRun(t, s, "DELETE FROM r WHERE id = 5", "DELETE 1")
	mustRun(t, s, "CREATE TABLE w (id bigint, note text) WITH (chunk_size = '64kB')", "")
	mustRun(t, s, fmt.Sprintf("INSERT INTO w SELECT g, 'the note of row ' || g::text || ', which is longer than its id' FROM generate_series(0, %d) g", n-1), fmt.Sprintf("INSERT 0 %d", n))
	flushAll(t, db)
	for _, c := range []struct {
		q    string
		rows int
	}{
		{"COPY (SELECT id, pad FROM r) TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 1000, START_BATCH %d)", n - 1},
		{"COPY (SELECT id, note FROM w WHERE id > 70) TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 1000, START_BATCH %d)", n - 71},
	} {
		fullRead = chunks(func() { full = copyIDs(t, s, fmt.Sprintf(c.q, 0)) })
		restRead = chunks(func() { rest = copyIDs(t, s, fmt.Sprintf(c.q, start)) })
		if len(full) != c.rows || !slices.Equal(full[start*1000:], rest) {
			t.Fatalf("%s, START_BATCH %d: %d rows, want the last %d of %d", c.q, start, len(rest), len(full)-start*1000, c.rows)
		}
		if restRead >= fullRead {
			t.Fatalf("%s, START_BATCH %d read %d chunks, the whole stream %d: the skipped groups' values were read", c.q, start, restRead, fullRead)
		}
	}
}

// openSession opens an in-memory database with opts and a session on it;
// the database closes when the test ends.
func openSession(t *testing.T, opts storage.Options) (*storage.DB, *Session) {
	t.Helper()
	db, err := storage.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, connect(t, NewEngine(db, nil), "u")
}

// flushAll moves db's buffered rows into fragments.
func flushAll(t *testing.T, db *storage.DB) {
	t.Helper()
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// copyFrames runs q, a tensor stream, and returns its frames.
func copyFrames(t *testing.T, s *Session, q string) [][]byte {
	t.Helper()
	r := &frameWriter{}
	if err := s.ExecSimple(context.Background(), q, r); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	for i, f := range r.frames {
		r.frames[i] = withoutSource(t, f)
	}
	return r.frames
}

// withoutSource returns frame f without the source block of a stream's
// first frame, laid out as the stream's other frames are, so that the
// frames of streams that start at different batches compare.
func withoutSource(t *testing.T, f []byte) []byte {
	le := binary.LittleEndian
	if le.Uint16(f[6:])&1 == 0 {
		return f
	}
	hl := int(le.Uint32(f[8:]))
	// The descriptors' end: walk them.
	p := 32
	var offs []int
	for range le.Uint32(f[12:]) {
		p += 2 + int(le.Uint16(f[p:]))
		ndim := int(f[p+2])
		p += 4 + 4*ndim
		for k := range 4 {
			offs = append(offs, p+16*k)
		}
		p += 64
	}
	align := func(n int) int { return (n + 63) &^ 63 }
	shift := align(hl) - align(p)
	out := append([]byte(nil), f[:p]...)
	le.PutUint16(out[6:], 0)
	le.PutUint32(out[8:], uint32(p))
	for _, o := range offs {
		if off := le.Uint64(out[o:]); off != 0 {
			le.PutUint64(out[o:], off-uint64(shift))
		}
	}
	out = append(out, make([]byte, align(p)-p)...)
	if len(f) < align(hl) {
		t.Fatalf("frame of %d bytes, header %d", len(f), hl)
	}
	return append(out, f[align(hl):]...)
}

// TestCopyToTensorShuffledStartBatch resumes buffer-shuffled streams at
// batches inside the first row group, in the middle and in the drain at
// the end: the frames must be the full stream's from that batch on, and
// the skipped rows are replayed from their ids, not read (fewer chunks
// read than the full stream when most of it is skipped). The table has
// fragments, a deleted row and buffered rows; the stream is sharded, and
// a projection and a text column go through the rows fetched back into
// the buffer.
func TestCopyToTensorShuffledStartBatch(t *testing.T) {
	db, s := openSession(t, storage.Options{InMemory: true, FlushRows: 1 << 30, NoCompaction: true})
	const n = 4 * storage.RowGroupRows
	mustRun(t, s, "CREATE TABLE r (id bigint, note text, pad bigint) WITH (chunk_size = '64kB')", "")
	mustRun(t, s, fmt.Sprintf("INSERT INTO r SELECT g, 'note of row ' || g::text || ', padded to about forty bytes', g * 3 FROM generate_series(0, %d) g", n-1),
		fmt.Sprintf("INSERT 0 %d", n))
	flushAll(t, db)
	vs, err := db.Versions("r")
	if err != nil || len(vs) == 0 {
		t.Fatal(vs, err)
	}
	first := vs[len(vs)-1].Version
	mustRun(t, s, "DELETE FROM r WHERE id = 20000", "DELETE 1")
	mustRun(t, s, fmt.Sprintf("INSERT INTO r SELECT g, 'buffered', g FROM generate_series(%d, %d) g", n, n+299), "INSERT 0 300")
	chunks := func(f func()) int64 {
		before := db.Stats().ChunksRead.Load()
		f()
		return db.Stats().ChunksRead.Load() - before
	}
	for _, c := range []struct{ query, shard, version string }{
		{"r", "0/1", ""},
		{"r", "1/2", ""},
		{"(SELECT pad, note FROM r)", "0/1", ""},
		{"(SELECT id, note, pad FROM r WHERE pad >= 300 AND pad <> 3003)", "0/1", ""},
		{"r", "0/1", fmt.Sprintf(", VERSION %d", first)}, // row 20000 there, the buffered rows not
	} {
		q := "COPY " + c.query + " TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 1000, SHUFFLE true, SHUFFLE_BUFFER 5000, SEED 11, SHARD '" + c.shard + "'" + c.version + ", START_BATCH %d)"
		var full [][]byte
		fullRead := chunks(func() { full = copyFrames(t, s, fmt.Sprintf(q, 0)) })
		last := len(full) - 1
		for _, start := range []int{1, 7, last / 2, last - 3, last} {
			var rest [][]byte
			restRead := chunks(func() { rest = copyFrames(t, s, fmt.Sprintf(q, start)) })
			if len(rest) != len(full)-start {
				t.Fatalf("COPY %s SHARD %s, START_BATCH %d: %d frames, want %d", c.query, c.shard, start, len(rest), len(full)-start)
			}
			for i, f := range rest {
				if !bytes.Equal(f, full[start+i]) {
					t.Fatalf("COPY %s SHARD %s, START_BATCH %d: frame %d differs from the full stream's", c.query, c.shard, start, start+i)
				}
			}
			if start == last {
				t.Logf("COPY %s SHARD %s: %d chunks read from batch %d, %d for the whole stream", c.query, c.shard, restRead, start, fullRead)
			}
			if start == last && restRead*2 > fullRead {
				t.Fatalf("COPY %s SHARD %s, START_BATCH %d read %d chunks, the whole stream %d: the skipped rows were read", c.query, c.shard, start, restRead, fullRead)
			}
		}
	}
}

// notesRows is the number of rows of notesTable's table.
const notesRows = 2*storage.RowGroupRows + 700

// notesTable opens a session on a database holding table r (id, note,
// pad) of notesRows rows in fragments of 64 kB chunks: row g has id g,
// note 'note of row g' and pad 3g.
func notesTable(t *testing.T) (*storage.DB, *Session) {
	t.Helper()
	db, s := openSession(t, storage.Options{InMemory: true, FlushRows: 1 << 30, NoCompaction: true})
	mustRun(t, s, "CREATE TABLE r (id bigint, note text, pad bigint) WITH (chunk_size = '64kB')", "")
	mustRun(t, s, fmt.Sprintf("INSERT INTO r SELECT g, 'note of row ' || g::text, g * 3 FROM generate_series(0, %d) g", notesRows-1),
		fmt.Sprintf("INSERT 0 %d", notesRows))
	flushAll(t, db)
	return db, s
}

// TestCopyToTensorExactByID streams exact shuffles of a table, which hold
// only row ids and read the rows by id as they are sent: every row's
// values must be its own (with and without a WHERE), every row must come
// exactly once across shards, START_BATCH must resume the same order
// without reading the rows it skips, and a VERSION must give the rows as
// that version has them.
func TestCopyToTensorExactByID(t *testing.T) {
	db, s := notesTable(t)
	const n = notesRows
	vs, err := db.Versions("r")
	if err != nil || len(vs) == 0 {
		t.Fatal(vs, err)
	}
	first := vs[len(vs)-1].Version // n rows, 100 among them
	mustRun(t, s, "DELETE FROM r WHERE id = 100", "DELETE 1")
	mustRun(t, s, fmt.Sprintf("INSERT INTO r SELECT g, 'buffered', g FROM generate_series(%d, %d) g", n, n+199), "INSERT 0 200")
	const rows = n - 1 + 200
	reads := func(f func()) int64 {
		st := db.Stats()
		before := st.ChunksRead.Load() + st.RangeReads.Load()
		f()
		return st.ChunksRead.Load() + st.RangeReads.Load() - before
	}
	opts := "FORMAT tensor, BATCH_SIZE 1000, SHUFFLE 'exact', SEED 5"
	var full [][]byte
	fullRead := reads(func() { full = copyFrames(t, s, "COPY r TO STDOUT WITH ("+opts+")") })
	if len(full) != (rows+999)/1000 {
		t.Fatalf("%d frames, want %d", len(full), (rows+999)/1000)
	}
	// Each row's values are its own: the rows read by id are the ids'.
	for _, q := range []string{"r", "(SELECT id, note, pad FROM r WHERE id % 3 <> 1)"} {
		var b stream.Batch
		got := 0
		for i, f := range copyFrames(t, s, "COPY "+q+" TO STDOUT WITH ("+opts+")") {
			if err := stream.ParseFrame(f, &b); err != nil {
				t.Fatalf("COPY %s, frame %d: %v", q, i, err)
			}
			ids, pads, notes := b.Column("id").Int64(), b.Column("pad").Int64(), b.Column("note")
			for k, id := range ids {
				wantNote, wantPad := fmt.Sprintf("note of row %d", id), 3*id
				if id >= n {
					wantNote, wantPad = "buffered", id
				}
				if notes.String(k) != wantNote || pads[k] != wantPad || q != "r" && id%3 == 1 {
					t.Fatalf("COPY %s, frame %d: row %d has note %q and pad %d", q, i, id, notes.String(k), pads[k])
				}
			}
			got += len(ids)
		}
		if q == "r" && got != rows || q != "r" && got == 0 {
			t.Fatalf("COPY %s: %d rows", q, got)
		}
	}
	last := len(full) - 1
	var rest [][]byte
	restRead := reads(func() { rest = copyFrames(t, s, fmt.Sprintf("COPY r TO STDOUT WITH (%s, START_BATCH %d)", opts, last)) })
	if len(rest) != 1 || !bytes.Equal(rest[0], full[last]) {
		t.Fatalf("START_BATCH %d: %d frames, not the full stream's last", last, len(rest))
	}
	if restRead*2 > fullRead {
		t.Fatalf("START_BATCH %d read %d chunks and rows, the whole stream %d: the skipped rows were read", last, restRead, fullRead)
	}
	seen := make(map[int64]int)
	for rank := range 3 {
		ids := copyIDs(t, s, fmt.Sprintf("COPY (SELECT id FROM r) TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 1000, SHUFFLE 'exact', SEED 5, SHARD '%d/3')", rank))
		if slices.IsSorted(ids) {
			t.Fatalf("shard %d/3 is not shuffled", rank)
		}
		for _, id := range ids {
			seen[id]++
		}
	}
	if len(seen) != rows || seen[100] != 0 {
		t.Fatalf("3 shards sent %d distinct rows, want %d (row 100 %d times)", len(seen), rows, seen[100])
	}
	for id, k := range seen {
		if k != 1 {
			t.Fatalf("row %d sent %d times", id, k)
		}
	}
	// VERSION: the rows as that version has them (row 100 back, the
	// buffered rows not there yet), read by id, resumed in the same order.
	qv := fmt.Sprintf("COPY (SELECT id FROM r) TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 1000, SHUFFLE 'exact', SEED 5, VERSION %d, START_BATCH %%d)", first)
	old := copyIDs(t, s, fmt.Sprintf(qv, 0))
	sorted := slices.Sorted(slices.Values(old))
	if len(old) != n || sorted[0] != 0 || sorted[n-1] != n-1 || slices.IsSorted(old) || !slices.Contains(old, 100) {
		t.Fatalf("VERSION %d: %d rows from %d to %d", first, len(old), sorted[0], sorted[len(sorted)-1])
	}
	for i := 1; i < n; i++ {
		if sorted[i] == sorted[i-1] {
			t.Fatalf("VERSION %d: row %d sent twice", first, sorted[i])
		}
	}
	if rest := copyIDs(t, s, fmt.Sprintf(qv, 20)); !slices.Equal(rest, old[20000:]) {
		t.Fatalf("VERSION %d, START_BATCH 20: %d rows, want the last %d", first, len(rest), len(old)-20000)
	}
}

// TestCopyToTensorLateRows streams a table with a WHERE that reads a
// narrow column and that zone maps cannot prune: when few rows of a group
// pass, only they are read, by id (a fraction of the bytes the scan of the
// wide, uncompressed column reads); when many pass, the group is scanned.
// Either way the frames equal those of the same query run through the
// operators (an ORDER BY makes it one).
func TestCopyToTensorLateRows(t *testing.T) {
	db, s := openSession(t, storage.Options{InMemory: true, FlushRows: 1 << 30, NoCompaction: true, WholeChunkFetch: -1})
	const n = 3 * storage.RowGroupRows
	mustRun(t, s, "CREATE TABLE w (id bigint, v float4[64]) WITH (chunk_size = '256kB', compression = 'none')", "")
	arr := "'{" + strings.Repeat("1.5,", 63) + "2.5}'"
	mustRun(t, s, fmt.Sprintf("INSERT INTO w SELECT g, %s FROM generate_series(0, %d) g", arr, n-1), fmt.Sprintf("INSERT 0 %d", n))
	flushAll(t, db)
	mustRun(t, s, "DELETE FROM w WHERE id = 2003", "DELETE 1")
	bytesRead := func(f func()) int64 {
		st := db.Stats()
		before := st.RangeBytes.Load() + st.ChunksRead.Load()*(256<<10)
		f()
		return st.RangeBytes.Load() + st.ChunksRead.Load()*(256<<10) - before
	}
	for _, c := range []struct {
		where string
		late  bool
	}{
		{"id - id / 5000 * 5000 = 17", true}, // 1 row in 5000, spread over the table
		{"id - id / 1000 * 1000 < 4", false}, // 0.4%: a row in most checksum blocks
		{"id - id / 2 * 2 = 0", false},       // half
	} {
		q := "COPY (SELECT id, v FROM w WHERE " + c.where + ") TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 64)"
		ops := "COPY (SELECT id, v FROM w WHERE " + c.where + " ORDER BY id) TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 64)"
		var got, want [][]byte
		read := bytesRead(func() { got = copyFrames(t, s, q) })
		scanned := bytesRead(func() { want = copyFrames(t, s, ops) })
		if len(got) == 0 || len(got) != len(want) {
			t.Fatalf("WHERE %s: %d frames, through the operators %d", c.where, len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("WHERE %s: frame %d differs from the operators'", c.where, i)
			}
		}
		if c.late && read*3 > scanned {
			t.Fatalf("WHERE %s read about %d bytes, the scan %d: the rows that fail were read", c.where, read, scanned)
		}
	}
}

// TestCopyToTensorOrderByRandom streams SELECT ... ORDER BY random() of one
// table: it is the exact shuffle of the same rows by id (the same frames
// as SHUFFLE 'exact' with the stream's SEED, which a sort of the rows
// could not give), so it holds ids instead of rows and resumes at
// START_BATCH as TestCopyToTensorExactByID checks; a LIMIT and OFFSET
// apply to the shuffled order. Without SEED each statement draws its own
// order; sharded, the shards read disjoint rows.
func TestCopyToTensorOrderByRandom(t *testing.T) {
	_, s := notesTable(t)
	const n = notesRows
	mustRun(t, s, "DELETE FROM r WHERE id = 100", "DELETE 1")
	const sel = "SELECT note, id FROM r WHERE id % 3 <> 1"
	want := copyFrames(t, s, "COPY ("+sel+") TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 1000, SHUFFLE 'exact', SEED 5)")
	got := copyFrames(t, s, "COPY ("+sel+" ORDER BY random()) TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 1000, SEED 5)")
	if len(got) != len(want) || len(want) < 10 {
		t.Fatalf("ORDER BY random(): %d frames, SHUFFLE 'exact' %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("ORDER BY random() with SEED 5: frame %d differs from SHUFFLE 'exact' SEED 5's", i)
		}
	}
	last := len(want) - 1
	rest := copyFrames(t, s, fmt.Sprintf("COPY (%s ORDER BY random()) TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 1000, SEED 5, START_BATCH %d)", sel, last))
	if len(rest) != 1 || !bytes.Equal(rest[0], want[last]) {
		t.Fatalf("START_BATCH %d: %d frames, not the full stream's last", last, len(rest))
	}

	// LIMIT and OFFSET take their rows from the shuffled order.
	ids := copyIDs(t, s, "COPY (SELECT id FROM r ORDER BY random()) TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 1000, SEED 9)")
	if len(ids) != n-1 || slices.IsSorted(ids) || slices.Contains(ids, 100) {
		t.Fatalf("ORDER BY random(): %d rows (sorted %v)", len(ids), slices.IsSorted(ids))
	}
	for _, c := range []struct{ clause, opts string }{
		{"LIMIT 2500", ""},
		{"LIMIT 2500 OFFSET 1234", ""},
		{"OFFSET 7", ""},
		{fmt.Sprintf("LIMIT 10 OFFSET %d", n-5), ""},
		{"LIMIT 0", ""},
		{"LIMIT 2500 OFFSET 1234", ", START_BATCH 2"},
	} {
		q := fmt.Sprintf("COPY (SELECT id FROM r ORDER BY random() %s) TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 1000, SEED 9%s)", c.clause, c.opts)
		var limit, offset int
		limit = -1
		if _, err := fmt.Sscanf(c.clause, "LIMIT %d OFFSET %d", &limit, &offset); err != nil {
			fmt.Sscanf(c.clause, "OFFSET %d", &offset)
		}
		end := len(ids)
		if limit >= 0 {
			end = min(end, offset+limit)
		}
		wantIDs := ids[min(offset, len(ids)):end]
		if c.opts != "" {
			wantIDs = wantIDs[2000:]
		}
		if got := copyIDs(t, s, q); !slices.Equal(got, wantIDs) {
			t.Fatalf("%s: %d rows, want %d", q, len(got), len(wantIDs))
		}
	}
	wantCode(t, s, "COPY (SELECT id FROM r ORDER BY random() LIMIT -1) TO STDOUT WITH (FORMAT tensor)", "2201W")

	// Without SEED, each statement its own order of the same rows.
	a := copyIDs(t, s, "COPY (SELECT id FROM r ORDER BY random()) TO STDOUT WITH (FORMAT tensor)")
	b := copyIDs(t, s, "COPY (SELECT id FROM r ORDER BY random()) TO STDOUT WITH (FORMAT tensor)")
	if slices.Equal(a, b) || !slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))) || len(a) != n-1 {
		t.Fatalf("unseeded ORDER BY random(): %d and %d rows, equal orders %v", len(a), len(b), slices.Equal(a, b))
	}
	// Sharded without SEED: disjoint rows, all of them.
	seen := make(map[int64]int)
	for rank := range 3 {
		for _, id := range copyIDs(t, s, fmt.Sprintf("COPY (SELECT id FROM r ORDER BY random()) TO STDOUT WITH (FORMAT tensor, SHARD '%d/3')", rank)) {
			seen[id]++
		}
	}
	if len(seen) != n-1 {
		t.Fatalf("3 shards sent %d distinct rows, want %d", len(seen), n-1)
	}
	for id, k := range seen {
		if k != 1 {
			t.Fatalf("row %d sent %d times by 3 shards", id, k)
		}
	}
	// Sharded with a LIMIT: the query's rows, dealt by position.
	total := 0
	for rank := range 2 {
		total += len(copyIDs(t, s, fmt.Sprintf("COPY (SELECT id FROM r ORDER BY random() LIMIT 501) TO STDOUT WITH (FORMAT tensor, SHARD '%d/2')", rank)))
	}
	if total != 501 {
		t.Fatalf("LIMIT 501 over 2 shards: %d rows", total)
	}
	// random() sent, or a second key before it: the query's own sort.
	var bt stream.Batch
	frames := copyFrames(t, s, "COPY (SELECT id % 2 AS odd, random() AS r FROM r ORDER BY odd, r) TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 100000)")
	if len(frames) != 1 {
		t.Fatalf("%d frames", len(frames))
	}
	if err := stream.ParseFrame(frames[0], &bt); err != nil {
		t.Fatal(err)
	}
	odd, rs := bt.Column("odd").Int64(), bt.Column("r").Float64()
	for i := 1; i < len(odd); i++ {
		if odd[i] < odd[i-1] || odd[i] == odd[i-1] && rs[i] < rs[i-1] {
			t.Fatalf("ORDER BY odd, r: row %d out of order", i)
		}
	}
}

// TestCopyToTensorLimitOffset streams SELECT ... LIMIT n OFFSET m of one
// table in order: the rows are the full stream's [m, m+n), and the rows
// before the OFFSET are cut off by row range, not read, so a deep OFFSET
// reads a few chunks. With deleted rows, a WHERE or START_BATCH the rows
// are the same.
func TestCopyToTensorLimitOffset(t *testing.T) {
	db, s := openSession(t, storage.Options{InMemory: true, FlushRows: 1 << 30, NoCompaction: true})
	const n = 2*storage.RowGroupRows + 700
	mustRun(t, s, "CREATE TABLE r (id bigint, note text) WITH (chunk_size = '64kB')", "")
	mustRun(t, s, fmt.Sprintf("INSERT INTO r SELECT g, 'note of row ' || g::text FROM generate_series(0, %d) g", n-1),
		fmt.Sprintf("INSERT 0 %d", n))
	flushAll(t, db)
	mustRun(t, s, fmt.Sprintf("INSERT INTO r SELECT g, 'note of row ' || g::text FROM generate_series(%d, %d) g", n, n+299), "INSERT 0 300")
	reads := func(f func()) int64 {
		st := db.Stats()
		before := st.ChunksRead.Load() + st.RangeReads.Load()
		f()
		return st.ChunksRead.Load() + st.RangeReads.Load() - before
	}
	// rows streams q and checks each row's note is its id's.
	rows := func(q string) []int64 {
		t.Helper()
		var ids []int64
		var b stream.Batch
		for i, f := range copyFrames(t, s, q) {
			if err := stream.ParseFrame(f, &b); err != nil {
				t.Fatalf("%s, frame %d: %v", q, i, err)
			}
			id, note := b.Column("id").Int64(), b.Column("note")
			for k := range id {
				if note.String(k) != fmt.Sprintf("note of row %d", id[k]) {
					t.Fatalf("%s: row %d has note %q", q, id[k], note.String(k))
				}
			}
			ids = append(ids, id...)
		}
		return ids
	}
	check := func(sel, opts string, all []int64) {
		t.Helper()
		for _, c := range []struct {
			clause        string
			limit, offset int
		}{
			{"LIMIT 10", 10, 0},
			{"LIMIT 10 OFFSET 20000", 10, 20000},
			{"LIMIT 5000 OFFSET 16000", 5000, 16000},
			{fmt.Sprintf("OFFSET %d", n-100), -1, n - 100},
			{fmt.Sprintf("LIMIT 1000 OFFSET %d", n+250), 1000, n + 250},
			{"LIMIT 0 OFFSET 3", 0, 3},
			{"OFFSET 99999999", -1, 99999999},
		} {
			q := fmt.Sprintf("COPY (%s %s) TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 777%s)", sel, c.clause, opts)
			end := len(all)
			if c.limit >= 0 {
				end = min(end, c.offset+c.limit)
			}
			want := all[min(c.offset, len(all)):max(end, min(c.offset, len(all)))]
			if strings.Contains(opts, "START_BATCH 2") {
				want = want[min(len(want), 2*777):]
			}
			if got := rows(q); !slices.Equal(got, want) {
				t.Fatalf("%s: %d rows, want %d", q, len(got), len(want))
			}
		}
	}
	all := rows("COPY (SELECT id, note FROM r) TO STDOUT WITH (FORMAT tensor)")
	if len(all) != n+300 {
		t.Fatalf("%d rows", len(all))
	}
	check("SELECT id, note FROM r", "", all)
	check("SELECT id, note FROM r", ", START_BATCH 2", all)
	// A deep OFFSET reads the chunks of its rows, not those before.
	var fullRead, deepRead int64
	fullRead = reads(func() { rows("COPY (SELECT id, note FROM r LIMIT 40000) TO STDOUT WITH (FORMAT tensor)") })
	deepRead = reads(func() { rows("COPY (SELECT id, note FROM r LIMIT 10 OFFSET 30000) TO STDOUT WITH (FORMAT tensor)") })
	if deepRead*5 > fullRead {
		t.Fatalf("LIMIT 10 OFFSET 30000 read %d chunks, the whole table %d", deepRead, fullRead)
	}
	var filtered []int64
	for _, id := range all {
		if id%3 != 1 {
			filtered = append(filtered, id)
		}
	}
	check("SELECT id, note FROM r WHERE id % 3 <> 1", "", filtered)
	mustRun(t, s, "DELETE FROM r WHERE id = 20003", "DELETE 1")
	all = slices.DeleteFunc(all, func(id int64) bool { return id == 20003 })
	check("SELECT id, note FROM r", "", all)
	check("SELECT note, id FROM r", ", START_BATCH 2", all)
}

// TestCopyToTensorSeededRandom: with SEED, a sharded ORDER BY random()
// with a LIMIT (an exact shuffle of all the rows, taken by position) and
// one kept as a sort (a join, whose random() draws from the seed) give the
// same order in every run and on every shard: shard k sends every third
// row of the unsharded stream from row k, so the shards are disjoint and
// together send the query's rows once.
func TestCopyToTensorSeededRandom(t *testing.T) {
	_, s := notesTable(t)
	for _, q := range []string{
		"SELECT id FROM r ORDER BY random() LIMIT 5000",
		"SELECT id FROM r WHERE id % 5 <> 0 ORDER BY random() LIMIT 4000 OFFSET 777",
		"SELECT a.id FROM r a JOIN r b ON a.id = b.pad WHERE b.id < 3000 ORDER BY random()",
	} {
		one := copyIDs(t, s, "COPY ("+q+") TO STDOUT WITH (FORMAT tensor, SEED 3)")
		if again := copyIDs(t, s, "COPY ("+q+") TO STDOUT WITH (FORMAT tensor, SEED 3)"); !slices.Equal(one, again) || slices.IsSorted(one) || len(one) < 900 {
			t.Fatalf("%s: %d rows, the same order twice %v", q, len(one), slices.Equal(one, again))
		}
		if other := copyIDs(t, s, "COPY ("+q+") TO STDOUT WITH (FORMAT tensor, SEED 4)"); slices.Equal(one, other) {
			t.Fatalf("%s: SEED 3 and 4 gave one order", q)
		}
		// Shard k sends rows k, k+3, k+6, ... of the unsharded stream;
		// resumed at START_BATCH, from that batch on.
		for rank := range 3 {
			var want []int64
			for i := rank; i < len(one); i += 3 {
				want = append(want, one[i])
			}
			got := copyIDs(t, s, fmt.Sprintf("COPY (%s) TO STDOUT WITH (FORMAT tensor, SEED 3, SHARD '%d/3')", q, rank))
			if !slices.Equal(got, want) {
				t.Fatalf("%s: shard %d/3 sent %d rows, not every third row of the unsharded stream (%d)", q, rank, len(got), len(want))
			}
			got = copyIDs(t, s, fmt.Sprintf("COPY (%s) TO STDOUT WITH (FORMAT tensor, SEED 3, SHARD '%d/3', BATCH_SIZE 100, START_BATCH 2)", q, rank))
			if !slices.Equal(got, want[200:]) {
				t.Fatalf("%s: shard %d/3 at START_BATCH 2 sent %d rows, want %d", q, rank, len(got), len(want)-200)
			}
		}
	}
}

// TestCopyToTensorComputedColumns streams a query of expressions over one
// table's rows (ARRAY[...], arithmetic, functions): it is read row group
// by row group as a table's columns are, so shards read only their own
// groups, START_BATCH replays a buffer shuffle by id, SHUFFLE 'exact' and
// ORDER BY random() hold ids, and VERSION applies; each row's values are
// computed from that row.
func TestCopyToTensorComputedColumns(t *testing.T) {
	db, s := notesTable(t)
	const sel = "SELECT ARRAY[id, pad] AS x, id * 2 AS d, upper(note) AS u FROM r WHERE id % 3 <> 1"
	reads := func(f func()) int64 {
		st := db.Stats()
		before := st.ChunksRead.Load() + st.RangeReads.Load()
		f()
		return st.ChunksRead.Load() + st.RangeReads.Load() - before
	}
	check := func(q string, frames [][]byte) []int64 {
		t.Helper()
		var b stream.Batch
		var ids []int64
		for i, f := range frames {
			if err := stream.ParseFrame(f, &b); err != nil {
				t.Fatalf("%s, frame %d: %v", q, i, err)
			}
			x, d, u := b.Column("x").Int64(), b.Column("d").Int64(), b.Column("u")
			for k := range d {
				id := d[k] / 2
				if x[2*k] != id || x[2*k+1] != 3*id || u.String(k) != fmt.Sprintf("NOTE OF ROW %d", id) || id%3 == 1 {
					t.Fatalf("%s: row %d has x %v, u %q", q, id, x[2*k:2*k+2], u.String(k))
				}
				ids = append(ids, id)
			}
		}
		return ids
	}
	exact := copyFrames(t, s, "COPY ("+sel+") TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 1000, SHUFFLE 'exact', SEED 5)")
	ids := check("exact", exact)
	if want := notesRows - notesRows/3; len(ids) < want-1 || slices.IsSorted(ids) {
		t.Fatalf("SHUFFLE 'exact': %d rows, want about %d, shuffled", len(ids), want)
	}
	random := copyFrames(t, s, "COPY ("+sel+" ORDER BY random()) TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 1000, SEED 5)")
	if len(random) != len(exact) || !bytes.Equal(random[3], exact[3]) {
		t.Fatalf("ORDER BY random() with SEED 5: not SHUFFLE 'exact''s frames")
	}
	q := func(extra string) string {
		return "COPY (" + sel + ") TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 1000, SHUFFLE true, SHUFFLE_BUFFER 5000, SEED 3" + extra + ")"
	}
	var full [][]byte
	fullRead := reads(func() { full = copyFrames(t, s, q("")) })
	check("SHUFFLE true", full)
	if rest := copyFrames(t, s, q(", START_BATCH 9")); len(rest) != len(full)-9 || !bytes.Equal(rest[0], full[9]) {
		t.Fatalf("START_BATCH 9: %d frames, not the full stream's from 9 on", len(rest))
	}
	seen := map[int64]int{}
	for rank := range 3 {
		var frames [][]byte
		shardRead := reads(func() { frames = copyFrames(t, s, q(fmt.Sprintf(", SHARD '%d/3'", rank))) })
		for _, id := range check("shard", frames) {
			seen[id]++
		}
		if shardRead*3 > fullRead*2 {
			t.Fatalf("shard %d/3 read %d chunks, the whole stream %d: it read the other shards' rows", rank, shardRead, fullRead)
		}
	}
	if len(seen) != len(ids) {
		t.Fatalf("3 shards sent %d rows, want %d", len(seen), len(ids))
	}
	vs, err := db.Versions("r")
	if err != nil || len(vs) == 0 {
		t.Fatal(vs, err)
	}
	v := copyFrames(t, s, "COPY ("+sel+fmt.Sprintf(") TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 1000, VERSION %d)", vs[len(vs)-1].Version))
	if got := check("VERSION", v); len(got) != len(ids) {
		t.Fatalf("VERSION: %d rows, want %d", len(got), len(ids))
	}
}

// TestCopyToTensorSubqueryFlattened: the queries the Python loader builds
// around a user's query (SELECT cols FROM (query) AS q WHERE cond) stream
// as the query of one table's rows they amount to: a shard reads only its
// row groups, and the curated ORDER BY random() with a filter added is the
// exact shuffle of the filtered rows.
func TestCopyToTensorSubqueryFlattened(t *testing.T) {
	db, s := notesTable(t)
	reads := func(f func()) int64 {
		st := db.Stats()
		before := st.ChunksRead.Load() + st.RangeReads.Load()
		f()
		return st.ChunksRead.Load() + st.RangeReads.Load() - before
	}
	const wrapped = "SELECT id, note FROM (SELECT id, note, pad FROM r WHERE pad > 30) AS q WHERE (id % 2 = 0)"
	const flat = "SELECT id, note FROM r WHERE pad > 30 AND id % 2 = 0"
	opts := "FORMAT tensor, BATCH_SIZE 1000, SHUFFLE true, SEED 4"
	var all [][]byte
	allRead := reads(func() { all = copyFrames(t, s, "COPY ("+wrapped+") TO STDOUT WITH ("+opts+")") })
	if want := copyFrames(t, s, "COPY ("+flat+") TO STDOUT WITH ("+opts+")"); len(all) != len(want) || !bytes.Equal(all[2], want[2]) {
		t.Fatalf("the wrapped query's frames are not the flat query's")
	}
	shardRead := reads(func() { copyFrames(t, s, "COPY ("+wrapped+") TO STDOUT WITH ("+opts+", SHARD '1/3')") })
	if shardRead*3 > allRead*2 {
		t.Fatalf("shard 1/3 of the wrapped query read %d chunks, all of it %d", shardRead, allRead)
	}
	curated := copyFrames(t, s, "COPY (SELECT * FROM (SELECT id, note FROM r WHERE pad > 30 ORDER BY RANDOM()) AS q WHERE (id % 2 = 0)) TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 1000, SEED 6)")
	exact := copyFrames(t, s, "COPY ("+flat+") TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 1000, SHUFFLE 'exact', SEED 6)")
	if len(curated) != len(exact) || !bytes.Equal(curated[1], exact[1]) {
		t.Fatalf("the filtered ORDER BY RANDOM() is not the exact shuffle of the filtered rows")
	}
}

// TestPrimaryKeyListLookups reads rows by a list of primary keys, as the
// map-style dataset does for a DataLoader batch: `id IN (...)` and
// `id = ANY('{...}')`, in a query and in a tensor stream, are primary key
// lookups that read only the chunks of the rows they find.
func TestPrimaryKeyListLookups(t *testing.T) {
	db, s := openSession(t, storage.Options{InMemory: true, FlushRows: 1 << 30, NoCompaction: true})
	mustRun(t, s, "CREATE TABLE pk (id bigint PRIMARY KEY, v bigint) WITH (chunk_size = '64kB')", "")
	mustRun(t, s, "INSERT INTO pk SELECT g, g * 3 FROM generate_series(0, 99999) g", "INSERT 0 100000")
	flushAll(t, db)
	for _, where := range []string{"id IN (70000, 5, 99999, 5, -1)", "id = ANY('{70000,5,99999,5,-1}')", "id = ANY(ARRAY[70000, 5, 99999])"} {
		st := db.Stats()
		lookups, read := st.PKLookups.Load(), st.ChunksRead.Load()
		ids := copyIDs(t, s, "COPY (SELECT id FROM pk WHERE "+where+") TO STDOUT WITH (FORMAT tensor)")
		slices.Sort(ids)
		if !slices.Equal(ids, []int64{5, 70000, 99999}) {
			t.Fatalf("%s: %v", where, ids)
		}
		if n := st.PKLookups.Load() - lookups; n != 1 {
			t.Fatalf("%s: %d primary key lookups, want 1", where, n)
		}
		// The table's id column alone is 13 chunks of 64 kB.
		if n := st.ChunksRead.Load() - read; n > 8 {
			t.Fatalf("%s: read %d chunks", where, n)
		}
		mustRun(t, s, "SELECT count(*), max(v) FROM pk WHERE "+where, "columns count:bigint,max:bigint; 3|299997; SELECT 1")
	}
}

// TestRowIDLookups reads rows of a table without a primary key by the
// system column _rowid: `_rowid IN (...)` and `_rowid = ANY(...)`, in a
// query and in a tensor stream, are one lookup by id that reads a few
// chunks, not the table.
func TestRowIDLookups(t *testing.T) {
	db, s := openSession(t, storage.Options{InMemory: true, FlushRows: 1 << 30, NoCompaction: true})
	mustRun(t, s, "CREATE TABLE nk (v bigint, w bigint) WITH (chunk_size = '64kB')", "")
	mustRun(t, s, "INSERT INTO nk SELECT g, g * 3 FROM generate_series(0, 99999) g", "INSERT 0 100000")
	flushAll(t, db)
	ids := copyIDs(t, s, "COPY (SELECT _rowid FROM nk WHERE v IN (5, 70000, 99999)) TO STDOUT WITH (FORMAT tensor)")
	if len(ids) != 3 {
		t.Fatalf("row ids %v", ids)
	}
	list := fmt.Sprintf("%d, %d, %d, %d, -1", ids[2], ids[0], ids[1], ids[0])
	for _, where := range []string{"_rowid IN (" + list + ")", "_rowid = ANY('{" + list + "}')", "_rowid = ANY(ARRAY[" + list + "])"} {
		st := db.Stats()
		lookups, read := st.RowIDLookups.Load(), st.ChunksRead.Load()
		got := copyIDs(t, s, "COPY (SELECT _rowid FROM nk WHERE "+where+") TO STDOUT WITH (FORMAT tensor)")
		if !slices.Equal(got, ids) {
			t.Fatalf("%s: %v, want %v", where, got, ids)
		}
		vs := copyIDs(t, s, "COPY (SELECT v FROM nk WHERE "+where+") TO STDOUT WITH (FORMAT tensor)")
		if !slices.Equal(vs, []int64{5, 70000, 99999}) {
			t.Fatalf("%s: values %v", where, vs)
		}
		if n := st.RowIDLookups.Load() - lookups; n != 2 {
			t.Fatalf("%s: %d lookups by _rowid, want 2", where, n)
		}
		// The table's v column alone is 13 chunks of 64 kB.
		if n := st.ChunksRead.Load() - read; n > 12 {
			t.Fatalf("%s: read %d chunks", where, n)
		}
		mustRun(t, s, "SELECT count(*), max(w) FROM nk WHERE "+where, "columns count:bigint,max:bigint; 3|299997; SELECT 1")
	}
}

// shardedTable opens a database whose table e holds ids 0 to 39999, the
// first 30000 in a fragment and the rest buffered, and returns a session.
func shardedTable(t *testing.T) (*Engine, *storage.DB, *Session) {
	t.Helper()
	db, err := storage.Open(storage.Options{InMemory: true, FlushRows: 1 << 30, NoCompaction: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	eng := NewEngine(db, nil)
	a := connect(t, eng, "u")
	mustRun(t, a, "CREATE TABLE e (id bigint)", "")
	mustRun(t, a, "INSERT INTO e SELECT g FROM generate_series(0, 29999) g", "INSERT 0 30000")
	flushAll(t, db)
	mustRun(t, a, "INSERT INTO e SELECT g FROM generate_series(30000, 39999) g", "INSERT 0 10000") // buffered
	return eng, db, a
}

// TestShardsOfOneSnapshot streams the shards of one epoch from separate
// sessions, at separate times, while the table's buffered rows are
// flushed in between: reading the snapshot one session exported
// (pg_export_snapshot, SET TRANSACTION SNAPSHOT), they see one layout and
// partition the rows the exporter saw.
func TestShardsOfOneSnapshot(t *testing.T) {
	eng, db, a := shardedTable(t)
	mustRun(t, a, "BEGIN", "BEGIN")
	out, err := run(t, a, "SELECT pg_export_snapshot()")
	parts := strings.Split(out, "; ")
	if err != nil || len(parts) != 3 {
		t.Fatalf("pg_export_snapshot(): %q, %v", out, err)
	}
	id := parts[1]
	seen := make([]int, 40000)
	for rank := range 3 {
		// Between the shards the buffered rows move into a fragment, and
		// more rows come: the groups of the latest snapshot differ.
		mustRun(t, connect(t, eng, "u"), fmt.Sprintf("INSERT INTO e VALUES (%d)", 40000+rank), "INSERT 0 1")
		flushAll(t, db)
		s := connect(t, eng, "u")
		mustRun(t, s, "BEGIN", "BEGIN")
		mustRun(t, s, "SET TRANSACTION SNAPSHOT '"+id+"'", "SET")
		ids := copyIDs(t, s, fmt.Sprintf("COPY e TO STDOUT WITH (FORMAT tensor, SHUFFLE true, SEED 4, SHARD '%d/3')", rank))
		mustRun(t, s, "COMMIT", "COMMIT")
		for _, v := range ids {
			if v >= 40000 {
				t.Fatalf("shard %d sent row %d, committed after the snapshot", rank, v)
			}
			seen[v]++
		}
	}
	for v, k := range seen {
		if k != 1 {
			t.Fatalf("row %d sent %d times", v, k)
		}
	}
	mustRun(t, a, "COMMIT", "COMMIT")
	s := connect(t, eng, "u")
	mustRun(t, s, "BEGIN", "BEGIN")
	if _, err := run(t, s, "SET TRANSACTION SNAPSHOT '"+id+"'"); err == nil || !strings.Contains(err.Error(), "invalid snapshot identifier") {
		t.Fatalf("import after the exporter's end: %v", err)
	}
}

// TestShardsOfOneEpoch: shards that name one EPOCH read one snapshot, taken
// by the first of them, with no transaction held open by anyone: writes and
// flushes between the shards' statements change the table's row groups, and
// without the epoch the shards would overlap and miss rows.
func TestShardsOfOneEpoch(t *testing.T) {
	eng, db, a := shardedTable(t)
	shards := func(epoch string, world int, between func(rank int)) []int {
		t.Helper()
		seen := make([]int, 50000)
		for rank := range world {
			between(rank)
			s := connect(t, eng, "u")
			opt := ""
			if epoch != "" {
				opt = ", EPOCH '" + epoch + "'"
			}
			for _, v := range copyIDs(t, s, fmt.Sprintf("COPY e TO STDOUT WITH (FORMAT tensor, SHUFFLE true, SEED 4, SHARD '%d/%d'%s)", rank, world, opt)) {
				seen[v]++
			}
		}
		return seen
	}
	next := 40000
	write := func(int) {
		// The buffered rows move into a fragment, and more rows come: the
		// groups of the latest snapshot differ from the last statement's.
		mustRun(t, connect(t, eng, "u"), fmt.Sprintf("INSERT INTO e VALUES (%d)", next), "INSERT 0 1")
		next++
		flushAll(t, db)
	}
	seen := shards("run1:0", 3, write)
	for v, k := range seen {
		if v <= 40000 && k != 1 || v > 40000 && k != 0 {
			t.Fatalf("epoch run1:0: row %d sent %d times (rows past 40000 came after its first statement)", v, k)
		}
	}
	// The next epoch's key takes a new snapshot: the rows written during
	// the last epoch are in it.
	seen = shards("run1:1", 2, func(int) {})
	for v, k := range seen[:next] {
		if k != 1 {
			t.Fatalf("epoch run1:1: row %d sent %d times", v, k)
		}
	}
	// The same steps without an epoch: the shards do not partition the
	// rows (what this option is for).
	mustRun(t, a, "INSERT INTO e SELECT g FROM generate_series(45000, 49999) g", "INSERT 0 5000") // buffered
	seen = shards("", 3, write)
	bad := 0
	for v := range 45000 {
		if seen[v] != 1 {
			bad++
		}
	}
	if bad == 0 {
		t.Fatal("without EPOCH the shards still partitioned the rows: the test no longer shows what EPOCH does")
	}

	// EPOCH comes first in a transaction block; as its first statement it
	// reads the epoch's snapshot, which then holds for the block.
	s := connect(t, eng, "u")
	mustRun(t, s, "BEGIN", "BEGIN")
	n0 := len(copyIDs(t, s, "COPY e TO STDOUT WITH (FORMAT tensor, EPOCH 'run1:0')"))
	mustRun(t, s, "COMMIT", "COMMIT")
	if n0 != 40001 {
		t.Fatalf("epoch run1:0 in a block: %d rows, want 40001", n0)
	}
	mustRun(t, s, "BEGIN", "BEGIN")
	mustRun(t, s, "SELECT count(*) FROM e", "")
	wantCode(t, s, "COPY e TO STDOUT WITH (FORMAT tensor, EPOCH 'run1:0')", pgerror.ActiveSQLTransaction)
	mustRun(t, s, "ROLLBACK", "ROLLBACK")
}
