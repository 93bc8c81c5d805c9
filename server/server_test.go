package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deeplaked/deeplaked/server"
)

func startServer(t *testing.T, dir string) *server.Server {
	t.Helper()
	srv, err := server.Start(context.Background(), server.Options{Listen: "127.0.0.1:0", DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	// Before dir's own cleanup, which was registered first.
	t.Cleanup(func() { srv.Close() })
	return srv
}

func connect(t *testing.T, addr string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, "postgres://anyone@"+addr+"/postgres?sslmode=disable&default_query_exec_mode=simple_protocol")
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// connectExtended connects pgx to the server with its default, extended
// query protocol (parameters bound, results in binary where pgx asks).
func connectExtended(t *testing.T, srv *server.Server) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, "postgres://anyone@"+srv.Addr()+"/postgres?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// queryText runs q and returns every value as the text the server sent.
func queryText(t *testing.T, conn *pgx.Conn, q string) [][]string {
	t.Helper()
	res := conn.PgConn().Exec(context.Background(), q)
	var rows [][]string
	for res.NextResult() {
		rr := res.ResultReader()
		for rr.NextRow() {
			var row []string
			for _, v := range rr.Values() {
				if v == nil {
					row = append(row, "NULL")
				} else {
					row = append(row, string(v))
				}
			}
			rows = append(rows, row)
		}
		if _, err := rr.Close(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := res.Close(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return rows
}

func mustExec(t *testing.T, conn *pgx.Conn, q string) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func TestRestartKeepsEverything(t *testing.T) {
	dir := t.TempDir()
	srv := startServer(t, dir)
	conn := connect(t, srv.Addr())
	mustExec(t, conn, `CREATE TABLE IF NOT EXISTS training_samples (id SERIAL PRIMARY KEY, text TEXT, embedding VECTOR(3), image BLOB, label INT, metadata JSONB, t uint8[2][2], r float32[])`)
	mustExec(t, conn, `INSERT INTO training_samples (text, embedding, image, label, metadata, t, r) VALUES
		('a', '[1,2,3]', '\xdeadbeef', 1, '{"quality": "high"}', '{{1,2},{3,255}}', '{1.5}'),
		('b', '[4,5,6]', NULL, 2, '{"quality": "low"}', NULL, '{}'),
		(NULL, NULL, '\x00', NULL, NULL, '{{0,0},{0,0}}', '{1,2,3}')`)
	mustExec(t, conn, `DELETE FROM training_samples WHERE id = 2`)
	mustExec(t, conn, `UPDATE training_samples SET label = 7 WHERE id = 3`)
	want := queryText(t, conn, `SELECT * FROM training_samples ORDER BY id`)
	conn.Close(context.Background())
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}

	srv = startServer(t, dir)
	defer srv.Close()
	conn = connect(t, srv.Addr())
	defer conn.Close(context.Background())
	got := queryText(t, conn, `SELECT * FROM training_samples ORDER BY id`)
	if len(got) != 2 || len(want) != 2 {
		t.Fatalf("rows before %v, after %v", want, got)
	}
	for i := range want {
		for j := range want[i] {
			if got[i][j] != want[i][j] {
				t.Errorf("row %d col %d: %q after restart, %q before", i, j, got[i][j], want[i][j])
			}
		}
	}
	if got[0][2] != "[1,2,3]" || got[0][3] != `\xdeadbeef` || got[0][6] != "{{1,2},{3,255}}" {
		t.Errorf("values: %v", got[0])
	}
	// The serial sequence continues after the restart.
	mustExec(t, conn, `INSERT INTO training_samples (label) VALUES (9)`)
	if ids := queryText(t, conn, `SELECT id FROM training_samples WHERE label = 9`); len(ids) != 1 || ids[0][0] != "4" {
		t.Errorf("serial after restart: %v", ids)
	}
}

func TestErrorsKeepConnectionUsable(t *testing.T) {
	srv := startServer(t, t.TempDir())
	defer srv.Close()
	conn := connect(t, srv.Addr())
	defer conn.Close(context.Background())
	mustExec(t, conn, `CREATE TABLE t (id int PRIMARY KEY, v uint8[2], e vector(2), n text NOT NULL)`)
	for q, code := range map[string]string{
		`SELECT * FROM nope`: "42P01",
		`SELECT nope FROM t`: "42703",
		`INSERT INTO t VALUES (1, '{1,2}', '[1,2]', 'a'), (1, '{1,2}', '[1,2]', 'b')`: "23505",
		`INSERT INTO t VALUES (2, '{1,2}', '[1,2]', NULL)`:                            "23502",
		`SELEC 1`:          "42601",
		`SELECT 'x1'::int`: "22P02",
		`INSERT INTO t VALUES (3, '{1,256}', '[1,2]', 'a')`: "22003",
		`INSERT INTO t VALUES (3, '{1,2,3}', '[1,2]', 'a')`: "22000",
		`INSERT INTO t VALUES (3, '{1,2}', '[1,2,3]', 'a')`: "22000",
		`CREATE INDEX ON t (id)`:                            "0A000",
	} {
		_, err := conn.Exec(context.Background(), q)
		var pe *pgconn.PgError
		if !asPgError(err, &pe) || pe.Code != code {
			t.Errorf("%s: got %v, want SQLSTATE %s", q, err, code)
		}
		if rows := queryText(t, conn, `SELECT count(*) FROM t`); rows[0][0] != "0" {
			t.Errorf("after %s: table has %s rows", q, rows[0][0])
		}
	}
}

func asPgError(err error, target **pgconn.PgError) bool {
	pe, ok := err.(*pgconn.PgError)
	if ok {
		*target = pe
	}
	return ok
}
