// Package scaleout runs several deeplaked servers (the real binary,
// internal/proctest) on one S3 prefix (versitygw, internal/s3test), all
// with --durability bucket, under a concurrent workload of writes, DDL,
// queries and tensor streams, with one server killed and restarted in the
// middle; then it checks that every server holds the same rows and that
// they are what the clients were told was committed. Each file covers one
// part: the workload, the record of what clients were told, and the test.
package scaleout
