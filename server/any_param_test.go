package server_test

import (
	"context"
	"testing"
)

// TestAnyArrayParameter binds a list of keys as one array parameter, as
// psycopg sends a Python list for `= ANY(%s)`: $1 is inferred as an array
// of the column's type, and the rows of the keys that exist come back, on
// the primary key and on another column. (An array parameter holding a
// NULL fails with 22000: arrays are tensors, whose elements are not NULL.)
func TestAnyArrayParameter(t *testing.T) {
	ctx := context.Background()
	// The extended protocol: the array is a parameter, bound as such.
	conn := connectExtended(t, startServer(t, t.TempDir()))
	mustExec(t, conn, `CREATE TABLE k (id bigint PRIMARY KEY, v int)`)
	mustExec(t, conn, `INSERT INTO k SELECT g, g % 7 FROM generate_series(1, 5000) g`)
	for _, c := range []struct {
		q    string
		arg  any
		want int64
	}{
		{`SELECT count(*) FROM k WHERE id = ANY($1)`, []int64{3, 4999, 3, 7000}, 2},
		{`SELECT count(*) FROM k WHERE id = ANY($1)`, []int64{}, 0},
		{`SELECT count(*) FROM k WHERE v = ANY($1)`, []int32{0, 6}, 714 + 714},
		{`SELECT count(*) FROM k WHERE id = ANY($1::bigint[]) AND v = 3`, []int64{3, 10, 17, 18}, 3},
	} {
		var got int64
		if err := conn.QueryRow(ctx, c.q, c.arg).Scan(&got); err != nil || got != c.want {
			t.Errorf("%s with %v: %d, %v; want %d", c.q, c.arg, got, err, c.want)
		}
	}
}
