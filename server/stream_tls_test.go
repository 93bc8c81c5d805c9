package server_test

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deeplaked/deeplaked/client/stream"
	"github.com/deeplaked/deeplaked/server"
)

// TestTensorStreamTLS streams frames of 64 KiB and more (the server's
// vectored writes), in order and shuffled, over TLS and in the clear: the
// two must carry the same rows, each with its own image.
func TestTensorStreamTLS(t *testing.T) {
	_, cert, key := writeCerts(t)
	srv := startWith(t, server.Options{TLSCert: cert, TLSKey: key, Auth: "scram", BootstrapPassword: "tlspw", FlushRows: 500})
	loadImages(t, connString(t, srv, "deeplake", "tlspw", "sslmode=disable"))
	for _, opts := range []stream.Options{{BatchSize: 100}, {BatchSize: 100, Shuffle: true, Seed: 5}} {
		var got [2][]int32
		for k, mode := range []string{"sslmode=require", "sslmode=disable"} {
			got[k] = streamImageIDs(t, connString(t, srv, "deeplake", "tlspw", mode), opts)
		}
		if len(got[0]) != 2000 || !slices.Equal(got[0], got[1]) {
			t.Fatalf("%+v: %d rows over TLS, %d in the clear, or another order", opts, len(got[0]), len(got[1]))
		}
	}
}

// streamImageIDs streams table imgs (id int, img uint8[1024], each image
// all bytes id % 256) over a new connection to dsn and returns the ids in
// the order they came, failing if a row carries another row's image.
func streamImageIDs(t *testing.T, dsn string, opts stream.Options) []int32 {
	t.Helper()
	return streamImages(t, dsn, "imgs", 1024, opts)
}

// streamImages streams query, whose rows are (id int, img uint8[size])
// with each image all bytes id % 256, and returns the ids in the order
// they came, failing if a row carries another row's image.
func streamImages(t *testing.T, dsn, query string, size int, opts stream.Options) []int32 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgconn.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	s, err := stream.Stream(ctx, conn, query, opts)
	if err != nil {
		t.Fatal(err)
	}
	var got []int32
	for s.Next() {
		b := s.Batch()
		ids, img := b.Column("id").Int32(), b.Column("img").Uint8()
		for i, id := range ids {
			if !bytes.Equal(img[size*i:size*(i+1)], bytes.Repeat([]byte{byte(id)}, size)) {
				t.Fatalf("%+v: row %d (id %d) has another row's image", opts, i, id)
			}
		}
		got = append(got, ids...)
	}
	if err := s.Err(); err != nil {
		t.Fatalf("%+v: %v", opts, err)
	}
	return got
}

// loadImages creates table imgs (id int, img uint8[1024]) over a new
// connection to dsn and copies 2000 rows into it, row id's image all
// bytes id % 256, as streamImageIDs checks them.
func loadImages(t *testing.T, dsn string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgconn.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.Exec(ctx, `CREATE TABLE imgs (id int, img uint8[1024])`).Close(); err != nil {
		t.Fatal(err)
	}
	var rows bytes.Buffer
	for id := range 2000 {
		v := strconv.Itoa(id % 256)
		rows.WriteString(strconv.Itoa(id) + "\t{" + strings.Repeat(v+",", 1023) + v + "}\n")
	}
	if _, err := conn.CopyFrom(ctx, &rows, "COPY imgs FROM STDIN"); err != nil {
		t.Fatal(err)
	}
}
