package main
import (
 _ "github.com/jackc/pgx/v5"
 _ "github.com/jackc/pgx/v5/pgproto3"
 _ "github.com/pganalyze/pg_query_go/v6"
 _ "github.com/cockroachdb/pebble/v2"
 _ "github.com/klauspost/compress/zstd"
)
func main(){}
