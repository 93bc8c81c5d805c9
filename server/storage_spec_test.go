package server

import (
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/storage"
)

func TestParseStorageSpec(t *testing.T) {
	for spec, want := range map[string]storage.S3Options{
		"s3://b/p/q":                                   {Bucket: "b", Prefix: "p/q"},
		"s3://b":                                       {Bucket: "b"},
		"s3://b/p?read_part_size=8MB":                  {Bucket: "b", Prefix: "p", ReadPartSize: 8 << 20},
		"s3://b/p?read_part_size=512":                  {Bucket: "b", Prefix: "p", ReadPartSize: 512 << 10},
		"s3://b/?read_concurrency=64":                  {Bucket: "b", ReadConcurrency: 64},
		"s3://b?read_part_size=1GB&read_concurrency=1": {Bucket: "b", ReadPartSize: 1 << 30, ReadConcurrency: 1},
	} {
		got, err := parseStorageSpec(spec)
		if err != nil || got != want {
			t.Errorf("%s: %+v, %v; want %+v", spec, got, err, want)
		}
	}
	for spec, msg := range map[string]string{
		"s3://b/p?bogus=1":               "unknown setting \"bogus\"",
		"s3://b/p?read_part_size=8XB":    "read_part_size",
		"s3://b/p?read_part_size=32kB":   "read_part_size",
		"s3://b/p?read_part_size=2GB":    "read_part_size",
		"s3://b/p?read_concurrency=0":    "read_concurrency",
		"s3://b/p?read_concurrency=many": "read_concurrency",
		"s3://b/p?read_part_size=%zz":    "s3://b/p",
		"file:///tmp/x":                  "s3://bucket/prefix",
	} {
		if _, err := parseStorageSpec(spec); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v; want an error with %q", spec, err, msg)
		}
	}
}
