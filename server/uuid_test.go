package server_test

import (
	"context"
	"testing"
)

// TestUUIDBinary: pgx sends and reads uuid values in the binary format
// (16 bytes) through the extended protocol; a key lookup by a uuid
// parameter finds its row.
func TestUUIDBinary(t *testing.T) {
	ctx := context.Background()
	conn := connectExtended(t, startServer(t, t.TempDir()))
	mustExec(t, conn, `CREATE TABLE items (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), n int)`)
	mustExec(t, conn, `INSERT INTO items (n) SELECT g FROM generate_series(1, 100) g`)
	key := [16]byte{0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11}
	if _, err := conn.Exec(ctx, `INSERT INTO items VALUES ($1, $2)`, key, 1000); err != nil {
		t.Fatal(err)
	}
	var n int32
	if err := conn.QueryRow(ctx, `SELECT n FROM items WHERE id = $1`, key).Scan(&n); err != nil || n != 1000 {
		t.Fatalf("lookup by uuid: %d, %v", n, err)
	}
	var got [16]byte
	var text string
	if err := conn.QueryRow(ctx, `SELECT id, id::text FROM items WHERE n = 1000`).Scan(&got, &text); err != nil ||
		got != key || text != "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11" {
		t.Fatalf("read back %x %q, %v", got, text, err)
	}
	var distinct int64
	if err := conn.QueryRow(ctx, `SELECT count(DISTINCT id) FROM items`).Scan(&distinct); err != nil || distinct != 101 {
		t.Fatalf("%d distinct ids, %v", distinct, err)
	}
}
