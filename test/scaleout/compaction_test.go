package scaleout

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/deeplaked/deeplaked/internal/s3test"
	"github.com/deeplaked/deeplaked/server"
)

// TestCompactionAcrossServers flushes rows that two servers of one
// location inserted into one fragment, then ten small fragments of one
// server's rows: VACUUM must merge the small fragments, as it does when
// one server inserted every row.
//
// Each server takes row ids in blocks of 65,536 (storage/sequence.go), so
// the first fragment holds row ids 1..100 (the first server's) and
// 65,637..65,736 (the second's), and its row id range holds every later
// fragment's (101..200, ..., the first server's block). pickCompaction merges
// only fragments whose ranges do not overlap, taking them by MinRow: the
// wide fragment comes first and every small one after it is skipped; the
// wide one alone is not worth rewriting, so nothing is compacted, ever.
func TestCompactionAcrossServers(t *testing.T) {
	gw := s3test.Start(t)
	gw.SetEnv(t)
	ctx := context.Background()
	for _, servers := range []int{1, 2} {
		bucket := gw.NewBucketName()
		opts := server.Options{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Storage: "s3://" + bucket + "/c",
			S3Endpoint: gw.Endpoint, Durability: "bucket", RefreshInterval: time.Hour}
		a, err := server.Start(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		ca := connect(t, "postgres://postgres@"+a.Addr()+"/postgres?sslmode=disable")
		defer ca.Close(ctx)
		exec(t, ca, "CREATE TABLE d (id bigint, v bigint)")
		exec(t, ca, "INSERT INTO d SELECT g, g FROM generate_series(1, 100) g")
		// The next 100 rows come through the second server, if any.
		second := ca
		if servers == 2 {
			opts.DataDir, opts.Attach = t.TempDir(), true
			b, err := server.Start(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			cb := connect(t, "postgres://postgres@"+b.Addr()+"/postgres?sslmode=disable")
			defer cb.Close(ctx)
			second = cb
		}
		exec(t, second, "INSERT INTO d SELECT g, g FROM generate_series(101, 200) g")
		exec(t, ca, "SELECT deeplake_refresh()")
		if err := a.DB().Flush(ctx); err != nil {
			t.Fatal(err)
		}
		for i := 2; i < 12; i++ {
			exec(t, ca, fmt.Sprintf("INSERT INTO d SELECT g, g FROM generate_series(%d, %d) g", i*100+1, i*100+100))
			if err := a.DB().Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		st, err := a.DB().Vacuum(ctx, "d")
		if err != nil {
			t.Fatal(err)
		}
		frags, _ := filepath.Glob(filepath.Join(gw.Dir, bucket, "c", "tables", "*", "frags", "*"))
		t.Logf("%d server(s): VACUUM compacted %d of the 11 fragments; %d fragments in the bucket", servers, st.Fragments, len(frags))
		if st.Fragments < 11 {
			t.Errorf("rows of %d server(s): VACUUM compacted %d of 11 small fragments, want all", servers, st.Fragments)
		}
	}
}
