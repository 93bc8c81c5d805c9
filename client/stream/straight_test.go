package stream_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deeplaked/deeplaked/client/stream"
	"github.com/deeplaked/deeplaked/server"
)

// straightServer starts a server that also listens on a Unix socket,
// with chunks flushed past flushRows rows, runs stmts over TCP ("flush"
// flushes every table's buffered rows: the streams compared must see the
// same row groups), and returns it, its data directory and a connection
// over each.
func straightServer(t *testing.T, flushRows int, stmts ...string) (srv *server.Server, dataDir string, tcp, uc *pgconn.PgConn) {
	t.Helper()
	dataDir, sockDir := t.TempDir(), t.TempDir()
	srv, err := server.Start(context.Background(), server.Options{Listen: "127.0.0.1:0", DataDir: dataDir, UnixSocketDir: sockDir, FlushRows: flushRows})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	port := srv.Addr()[strings.LastIndexByte(srv.Addr(), ':')+1:]
	tcp = connect(t, "postgres://tester@"+srv.Addr()+"/db?sslmode=disable")
	t.Cleanup(func() { tcp.Close(context.Background()) })
	uc = connect(t, fmt.Sprintf("postgres://tester@/db?host=%s&port=%s&sslmode=disable", url.QueryEscape(sockDir), port))
	t.Cleanup(func() { uc.Close(context.Background()) })
	for _, q := range stmts {
		if q == "flush" {
			if err := srv.DB().Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := tcp.Exec(context.Background(), q).Close(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return srv, dataDir, tcp, uc
}

// checkStraight streams query with opts over TCP and through shared
// memory (an area of opts.SharedMemory bytes, or area): the batches must
// be equal, some through the area, and when straight at least minShare of
// the image bytes read straight from the chunks into the area, none
// otherwise.
func checkStraight(t *testing.T, srv *server.Server, tcp, uc *pgconn.PgConn, query string, opts stream.Options, area int64, straight bool, minShare float64, minRows int) {
	t.Helper()
	tcpOpts := opts
	tcpOpts.SharedMemory = 0
	want := streamAll(t, tcp, query, tcpOpts)
	if opts.SharedMemory == 0 {
		opts.SharedMemory = area
	}
	stats := srv.DB().Stats()
	chunks, read := stats.HollowChunks.Load(), stats.ExtentBytes.Load()
	got := streamAll(t, uc, query, opts)
	if !slices.Equal(got.ids, want.ids) || !bytes.Equal(got.images, want.images) || !slices.Equal(got.notes, want.notes) {
		t.Fatalf("%s %+v: the stream through shared memory differs from the one over TCP (%d and %d rows)", query, opts, len(got.ids), len(want.ids))
	}
	if len(want.ids) < minRows || got.shared == 0 {
		t.Fatalf("%s %+v: %d rows, %d batches through the area", query, opts, len(want.ids), got.shared)
	}
	chunks, read = stats.HollowChunks.Load()-chunks, stats.ExtentBytes.Load()-read
	if straight && (chunks == 0 || float64(read) < minShare*float64(len(got.images))) {
		t.Fatalf("%s %+v: %d chunks hollow, %d bytes read straight of %d", query, opts, chunks, read, len(got.images))
	}
	if !straight && chunks+read != 0 {
		t.Fatalf("%s %+v: %d chunks hollow, %d bytes read straight", query, opts, chunks, read)
	}
}

// TestStreamSharedMemoryStraight streams a table whose images lie in
// stored chunks, with deleted rows and rows still buffered, through
// shared memory: the image bytes are then read from
// the chunks straight into the area (hollow columns), and the batches
// must be those of the same stream over TCP, for every query shape that
// takes that path and some that do not.
func TestStreamSharedMemoryStraight(t *testing.T) {
	// 1 KiB images: 16 to a checksum block, so frames of 100 rows start
	// and end inside blocks; 64 kB chunks of 64 rows.
	image := func(from, to int) string {
		return fmt.Sprintf(`INSERT INTO img SELECT g, ('{' || rtrim(repeat('{' || rtrim(repeat(((g * 7 + %d) %% 251)::text || ',', 32), ',') || '},', 32), ',') || '}')::uint8[32][32],
		        CASE WHEN g %% 7 = 0 THEN NULL ELSE 'n' || g END FROM generate_series(%d, %d) g`, from%5, from, to)
	}
	srv, dataDir, tcp, uc := straightServer(t, 500,
		`CREATE TABLE img (id int PRIMARY KEY, image uint8[32][32], note text) WITH (chunk_size = '64kB', compression = 'none')`,
		image(1, 1000), image(1001, 2000), image(2001, 3000),
		`DELETE FROM img WHERE id % 13 = 0 AND id < 600 OR id BETWEEN 1200 AND 1333`,
		"flush",
		image(3001, 3100), // buffered
	)
	for _, tc := range []struct {
		query    string
		opts     stream.Options
		straight bool
	}{
		{"img", stream.Options{BatchSize: 100}, true},
		{"SELECT id, image, note FROM img", stream.Options{BatchSize: 128}, true},
		{"SELECT image, id, image AS again, note FROM img", stream.Options{BatchSize: 77}, true},
		{"SELECT id, image, note FROM img LIMIT 1700", stream.Options{BatchSize: 100}, true},
		{"img", stream.Options{BatchSize: 100, StartBatch: 7}, true},
		// Frames of over 1 MiB, read by several goroutines at once.
		{"img", stream.Options{BatchSize: 1100, SharedMemory: 8 << 20}, true},
		{"SELECT id, image, note FROM img ORDER BY id", stream.Options{BatchSize: 100}, false},
		{"SELECT id, image, note FROM img WHERE id % 2 = 0", stream.Options{BatchSize: 100}, false},
		{"img", stream.Options{BatchSize: 100, Shuffle: true, Seed: 3}, false},
	} {
		checkStraight(t, srv, tcp, uc, tc.query, tc.opts, 1<<20, tc.straight, 0.5, 1000)
	}

	// A damaged image fails the stream with XX001 and leaves the
	// connection and the rest of the table usable.
	files, _ := filepath.Glob(filepath.Join(dataDir, "objects", "tables", "*", "frags", "*", "0001-*.dlc"))
	if len(files) == 0 {
		t.Fatal("no chunk of column image")
	}
	slices.Sort(files)
	data, err := os.ReadFile(files[len(files)/2])
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-100] ^= 1
	if err := os.WriteFile(files[len(files)/2], data, 0o600); err != nil {
		t.Fatal(err)
	}
	wantStreamError(t, uc, "img", stream.Options{BatchSize: 100, SharedMemory: 1 << 20}, "XX001")
	if err := uc.Exec(context.Background(), "SELECT count(*) FROM img").Close(); err != nil {
		t.Fatal(err)
	}
}

// TestStreamSharedMemoryShuffledStraight streams a table of 9 KiB images
// (one to a checksum block) shuffled and sharded through shared memory:
// the shuffle buffer then holds where each image is stored instead of its
// bytes, each read straight into its frame, and the batches must be those
// of the same stream over TCP.
func TestStreamSharedMemoryShuffledStraight(t *testing.T) {
	image := func(from, to int) string {
		return fmt.Sprintf(`INSERT INTO img SELECT g, ('{' || rtrim(repeat('{' || rtrim(repeat(((g * 7) %% 251)::text || ',', 96), ',') || '},', 96), ',') || '}')::uint8[96][96],
		        CASE WHEN g %% 7 = 0 THEN NULL ELSE 'n' || g END FROM generate_series(%d, %d) g`, from, to)
	}
	srv, dataDir, tcp, uc := straightServer(t, 300,
		`CREATE TABLE img (id int PRIMARY KEY, image uint8[96][96], note text) WITH (chunk_size = '256kB', compression = 'none')`,
		image(1, 400), image(401, 800), image(801, 1200),
		`DELETE FROM img WHERE id % 17 = 0 AND id < 300`,
		"flush",
		image(1201, 1250), // buffered
	)
	for _, tc := range []struct {
		opts     stream.Options
		straight bool
	}{
		{stream.Options{BatchSize: 64, Shuffle: true, Seed: 5}, true},
		{stream.Options{BatchSize: 50, Shuffle: true, Seed: 6, ShuffleBuffer: 100}, true},
		{stream.Options{BatchSize: 64, Rank: 1, World: 2}, true},
		{stream.Options{BatchSize: 64, Shuffle: true, Seed: 7, Rank: 0, World: 2, DropLast: true}, true},
		// Resumed: the rows skipped replayed by id, the rows the replay
		// leaves in the buffer located by id (their images read
		// straight when they go out), the group where the replay ends
		// read whole, the groups after it straight; with a buffer
		// larger than the table every row is located by id.
		{stream.Options{BatchSize: 64, Shuffle: true, Seed: 5, StartBatch: 6}, true},
		{stream.Options{BatchSize: 32, Shuffle: true, Seed: 9, ShuffleBuffer: 100, StartBatch: 3}, true},
		// An exact shuffle asks where each batch's images are stored and
		// fetches the rest by id.
		{stream.Options{BatchSize: 64, ExactShuffle: true, Seed: 8}, true},
		{stream.Options{BatchSize: 40, ExactShuffle: true, Seed: 10, Rank: 1, World: 3, DropLast: true}, true},
	} {
		checkStraight(t, srv, tcp, uc, "img", tc.opts, 4<<20, tc.straight, 0.25, 300)
	}

	// Over TCP too, a shuffled stream reads its images where they are
	// stored, into the frames' buffers (the shuffle buffer holding where
	// each is): every row once, each with its own image.
	var ids []int32
	for id := int32(1); id <= 1250; id++ {
		if id%17 != 0 || id >= 300 {
			ids = append(ids, id)
		}
	}
	for _, opts := range []stream.Options{
		{BatchSize: 64, Shuffle: true, Seed: 5},
		{BatchSize: 50, Shuffle: true, Seed: 6, ShuffleBuffer: 100},
		{BatchSize: 64, ExactShuffle: true, Seed: 8},
	} {
		stats := srv.DB().Stats()
		read := stats.ExtentBytes.Load()
		got := streamAll(t, tcp, "img", opts)
		read = stats.ExtentBytes.Load() - read
		if sorted := slices.Sorted(slices.Values(got.ids)); !slices.Equal(sorted, ids) {
			t.Fatalf("over TCP %+v: %d rows, not each of the table's %d once", opts, len(got.ids), len(ids))
		}
		if slices.IsSorted(got.ids) {
			t.Fatalf("over TCP %+v: rows in order, not shuffled", opts)
		}
		const size = 96 * 96
		for i, id := range got.ids {
			img := got.images[i*size : (i+1)*size]
			if want := byte(id * 7 % 251); img[0] != want || bytes.Count(img, img[:1]) != size {
				t.Fatalf("over TCP %+v: row %d (id %d) has image bytes %d..., want all %d", opts, i, id, img[0], want)
			}
		}
		// All but the 50 buffered rows' images, also in the chunks with
		// deleted rows (a batch for each run of rows left).
		share := float64(read) / float64(len(got.images))
		if share < 0.9 {
			t.Fatalf("over TCP %+v: %d bytes read straight of %d", opts, read, len(got.images))
		}
		// Resumed at batch 3, it continues the same order, reading its
		// images straight as much as the whole stream does: the buffer
		// the replay fills holds where they are, and the group where the
		// replay ends is read straight after the rows it dropped.
		opts.StartBatch = 3
		read = stats.ExtentBytes.Load()
		rest := streamAll(t, tcp, "img", opts)
		read = stats.ExtentBytes.Load() - read
		skip := 3 * opts.BatchSize
		if !slices.Equal(rest.ids, got.ids[skip:]) || !bytes.Equal(rest.images, got.images[skip*size:]) {
			t.Fatalf("over TCP %+v: %d rows, not the last %d of the whole stream", opts, len(rest.ids), len(got.ids)-skip)
		}
		if rs := float64(read) / float64(len(rest.images)); rs < 0.9*share {
			t.Fatalf("over TCP %+v: %d bytes read straight of %d (%.2f), the whole stream %.2f", opts, read, len(rest.images), rs, share)
		}
	}

	// Compressed images are fetched by id as without shared memory: an
	// exact shuffle that finds no extent in its first batches stops
	// looking.
	for _, q := range []string{
		`CREATE TABLE zimg (id int PRIMARY KEY, image uint8[96][96], note text) WITH (chunk_size = '256kB', compression = 'lz4')`,
		`INSERT INTO zimg SELECT id, image, note FROM img`,
	} {
		if err := tcp.Exec(context.Background(), q).Close(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := srv.DB().Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, opts := range []stream.Options{
		{BatchSize: 64, ExactShuffle: true, Seed: 8},
		{BatchSize: 64, Shuffle: true, Seed: 8},
	} {
		checkStraight(t, srv, tcp, uc, "zimg", opts, 4<<20, false, 0, 300)
	}

	// Damaged images fail an exact shuffle with XX001, whether a frame
	// reads them straight or before a value fetched by id.
	files, _ := filepath.Glob(filepath.Join(dataDir, "objects", "tables", "*", "frags", "*", "0001-*.dlc"))
	if len(files) == 0 {
		t.Fatal("no chunk of column image")
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for k := 4096; k < len(data); k += 4096 {
			data[k] ^= 1
		}
		if err := os.WriteFile(name, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	wantStreamError(t, uc, "img", stream.Options{BatchSize: 64, ExactShuffle: true, Seed: 8, SharedMemory: 4 << 20}, "XX001")
	// Over TCP as well, whichever shuffle.
	wantStreamError(t, tcp, "img", stream.Options{BatchSize: 64, ExactShuffle: true, Seed: 8}, "XX001")
	wantStreamError(t, tcp, "img", stream.Options{BatchSize: 64, Shuffle: true, Seed: 8}, "XX001")
	if err := tcp.Exec(context.Background(), "SELECT count(*) FROM img").Close(); err != nil {
		t.Fatal(err)
	}
}

// wantStreamError streams query and wants it to fail with SQLSTATE code.
func wantStreamError(t *testing.T, conn *pgconn.PgConn, query string, opts stream.Options, code string) {
	t.Helper()
	s, err := stream.Stream(context.Background(), conn, query, opts)
	if err != nil {
		t.Fatal(err)
	}
	for s.Next() {
	}
	var pgErr *pgconn.PgError
	if !errors.As(s.Err(), &pgErr) || pgErr.Code != code {
		t.Fatalf("%s %+v: %v, want %s", query, opts, s.Err(), code)
	}
}

// TestStreamExactShuffleReadsImagesOnce shuffles exactly a table whose
// images are read where they are stored while its small vectors, many to
// a checksum block, are fetched by id: fetching the vectors must not read
// the images' chunks as well.
func TestStreamExactShuffleReadsImagesOnce(t *testing.T) {
	srv, _, tcp, _ := straightServer(t, 300,
		`CREATE TABLE eimg (id int PRIMARY KEY, emb vector(4), image uint8[96][96]) WITH (chunk_size = '256kB', compression = 'none')`,
		`INSERT INTO eimg SELECT g, ('[' || g || ',1,2,3]')::vector(4), ('{' || rtrim(repeat('{' || rtrim(repeat(((g * 7) % 251)::text || ',', 96), ',') || '},', 96), ',') || '}')::uint8[96][96]
		   FROM generate_series(1, 600) g`,
		"flush",
	)
	stats := srv.DB().Stats()
	chunks, read := stats.ChunksRead.Load(), stats.ExtentBytes.Load()
	s, err := stream.Stream(context.Background(), tcp, "eimg", stream.Options{BatchSize: 64, ExactShuffle: true, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int32
	const size = 96 * 96
	for s.Next() {
		b := s.Batch()
		emb, img := b.Column("emb").Float32(), b.Column("image").Uint8()
		for i, id := range b.Column("id").Int32() {
			if emb[4*i] != float32(id) || img[i*size] != byte(id*7%251) || bytes.Count(img[i*size:(i+1)*size], img[i*size:i*size+1]) != size {
				t.Fatalf("row %d (id %d): emb %v, image byte %d", i, id, emb[4*i:4*i+4], img[i*size])
			}
		}
		ids = append(ids, b.Column("id").Int32()...)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if slices.Sort(ids); len(ids) != 600 || ids[0] != 1 || ids[599] != 600 {
		t.Fatalf("%d rows", len(ids))
	}
	chunks, read = stats.ChunksRead.Load()-chunks, stats.ExtentBytes.Load()-read
	if read < 600*size || read > 2*600*size {
		t.Fatalf("%d image bytes read straight, want about %d", read, 600*size)
	}
	// The images take over 20 chunks of 256 kB; ids and vectors one each.
	if chunks > 10 {
		t.Fatalf("%d chunks read whole: the images' among them", chunks)
	}
}
