package server_test

import (
	"context"
	"testing"
)

// TestCreateTableAsParameters: CREATE TABLE ... AS and SELECT ... INTO
// through the extended protocol, their query's parameters typed from it
// (pgx prepares the statement and sends what ParameterDescription asks
// for), the tag counting the rows.
func TestCreateTableAsParameters(t *testing.T) {
	ctx := context.Background()
	conn := connectExtended(t, startServer(t, t.TempDir()))
	mustExec(t, conn, `CREATE TABLE src (id int PRIMARY KEY, img uint8[2][2], label int)`)
	mustExec(t, conn, `INSERT INTO src SELECT g, '{{1,2},{3,4}}', g % 5 FROM generate_series(1, 1000) g`)
	tag, err := conn.Exec(ctx, `CREATE TABLE cur AS SELECT id, img FROM src WHERE label = $1 AND id > $2`, "3", 500)
	if err != nil || tag.String() != "SELECT 100" {
		t.Fatalf("CREATE TABLE AS: %q, %v", tag, err)
	}
	tag, err = conn.Exec(ctx, `SELECT id INTO few FROM src WHERE id <= $1`, int64(7))
	if err != nil || tag.String() != "SELECT 7" {
		t.Fatalf("SELECT INTO: %q, %v", tag, err)
	}
	var n, lo int64
	var img []int16
	if err := conn.QueryRow(ctx, `SELECT count(*), min(id) FROM cur`).Scan(&n, &lo); err != nil || n != 100 || lo != 503 {
		t.Fatalf("cur: %d rows from %d, %v", n, lo, err)
	}
	if err := conn.QueryRow(ctx, `SELECT img FROM cur WHERE id = 503`).Scan(&img); err != nil || len(img) != 4 || img[3] != 4 {
		t.Fatalf("cur's image: %v, %v", img, err)
	}
	// A bad parameter fails the statement and leaves no table.
	if _, err := conn.Exec(ctx, `CREATE TABLE bad AS SELECT id FROM src WHERE id > $1`, "x"); err == nil {
		t.Fatal("a parameter that is not an integer was accepted")
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relname = 'bad'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("a failed CREATE TABLE AS left %d tables: %v", n, err)
	}
}
