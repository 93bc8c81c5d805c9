package stream_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/deeplaked/deeplaked/client/stream"
)

// TestStreamOutlivesDropTable drops a table while streams of it are
// open, over TCP and through shared memory, in order and shuffled: each
// stream goes on from its snapshot to the end, every row once with its
// own image, while the table is gone for new statements; once the
// streams are over, the table's objects are deleted.
func TestStreamOutlivesDropTable(t *testing.T) {
	const rows = 1200
	const size = 96 * 96
	image := `('{' || rtrim(repeat('{' || rtrim(repeat(((g * 7) % 251)::text || ',', 96), ',') || '},', 96), ',') || '}')::uint8[96][96]`
	for k, opts := range []stream.Options{
		{BatchSize: 64},
		{BatchSize: 64, Shuffle: true, Seed: 3},
		{BatchSize: 64, ExactShuffle: true, Seed: 4},
		{BatchSize: 64, SharedMemory: 1 << 20},
		{BatchSize: 64, Shuffle: true, Seed: 5, SharedMemory: 1 << 20},
		{BatchSize: 64, ExactShuffle: true, Seed: 6, SharedMemory: 1 << 20},
	} {
		_, dataDir, tcp, uc := straightServer(t, 300,
			`CREATE TABLE img (id int PRIMARY KEY, image uint8[96][96], note text) WITH (chunk_size = '256kB', compression = 'none')`,
			fmt.Sprintf(`INSERT INTO img SELECT g, %s, 'n' || g FROM generate_series(1, %d) g`, image, rows),
			"flush")
		conn, other := tcp, uc
		if opts.SharedMemory > 0 {
			conn, other = uc, tcp
		}
		s, err := stream.Stream(context.Background(), conn, "img", opts)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int32
		for n := 0; s.Next(); n++ {
			b := s.Batch()
			img := b.Column("image").Uint8()
			for i, id := range b.Column("id").Int32() {
				if want := byte(id * 7 % 251); img[i*size] != want || img[(i+1)*size-1] != want {
					t.Fatalf("%d %+v: row id %d has image bytes %d, want %d", k, opts, id, img[i*size], want)
				}
				ids = append(ids, id)
			}
			if n == 2 {
				if err := other.Exec(context.Background(), "DROP TABLE img").Close(); err != nil {
					t.Fatalf("DROP TABLE during the stream: %v", err)
				}
				if err := other.Exec(context.Background(), "SELECT count(*) FROM img").Close(); err == nil {
					t.Fatal("the dropped table is still there for a new statement")
				}
			}
		}
		if err := s.Err(); err != nil {
			t.Fatalf("%d %+v: the stream after DROP TABLE: %v", k, opts, err)
		}
		slices.Sort(ids)
		if len(ids) != rows || ids[0] != 1 || ids[rows-1] != rows || len(slices.Compact(ids)) != rows {
			t.Fatalf("%d %+v: %d rows, not each of the table's %d once", k, opts, len(ids), rows)
		}
		// The stream over, nothing reads the table: its objects go.
		var left []string
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if left, _ = filepath.Glob(filepath.Join(dataDir, "objects", "tables", "*", "*", "*", "*")); len(left) == 0 {
				break
			}
		}
		if len(left) > 0 {
			t.Fatalf("%d %+v: %d objects of the dropped table left, as %s", k, opts, len(left), left[0])
		}
	}
}
