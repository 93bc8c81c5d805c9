// Command deeplaked runs the deeplaked server: a SQL database for tensors
// that speaks the PostgreSQL wire protocol.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	_ "net/http/pprof" // profiles on --debug-listen
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"github.com/deeplaked/deeplaked/server"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
)

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// envDuration returns the duration in the environment variable name, or
// def when it is unset; a malformed value stops the program.
func envDuration(name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		fmt.Fprintf(os.Stderr, "deeplaked: %s=%q: not a duration such as 168h or 30m\n", name, v)
		os.Exit(2)
	}
	return d
}

// envInt returns the integer in the environment variable name, or def
// when it is unset; a malformed value stops the program.
func envInt(name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		fmt.Fprintf(os.Stderr, "deeplaked: %s=%q: not a positive integer\n", name, v)
		os.Exit(2)
	}
	return n
}

// envCount returns the non-negative integer in the environment variable
// name, or def when it is unset; a malformed value stops the program.
func envCount(name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		fmt.Fprintf(os.Stderr, "deeplaked: %s=%q: not a non-negative integer\n", name, v)
		os.Exit(2)
	}
	return n
}

// reservedConnsOption maps the flag's 0 (no reserved slots) to the
// negative value server.Options reads as none.
func reservedConnsOption(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

func main() {
	// As PostgreSQL does: every file the server creates (the catalog's,
	// the chunk objects) is readable by its user alone.
	syscall.Umask(0o077)

	listen := flag.String("listen", envOr("DEEPLAKED_LISTEN", "127.0.0.1:5433"), "address to listen on (env DEEPLAKED_LISTEN)")
	dataDir := flag.String("data-dir", envOr("DEEPLAKED_DATA_DIR", "./deeplake-data"), "data directory (env DEEPLAKED_DATA_DIR)")
	storageURL := flag.String("storage", envOr("DEEPLAKED_STORAGE", ""), "where table data lives: empty for the data directory, s3://bucket/prefix[?read_part_size=2MB&read_concurrency=32] for S3 (env DEEPLAKED_STORAGE)")
	s3Endpoint := flag.String("s3-endpoint", envOr("DEEPLAKED_S3_ENDPOINT", ""), "URL of an S3-compatible server; empty for AWS (env DEEPLAKED_S3_ENDPOINT)")
	cacheDir := flag.String("cache-dir", envOr("DEEPLAKED_CACHE_DIR", ""),
		"local directory that keeps the chunks read from --storage, so that the next pass over a table reads the disk; only with --storage (the data directory's objects are on local disk already); empty for none (env DEEPLAKED_CACHE_DIR)")
	cacheSizeFlag := flag.String("cache-size", envOr("DEEPLAKED_CACHE_SIZE", "10GB"), "most bytes --cache-dir holds, such as 10GB or 512MB (env DEEPLAKED_CACHE_SIZE)")
	attach := flag.Bool("attach", envOr("DEEPLAKED_ATTACH", "") == "true",
		"let a new data directory serve a --storage location that already holds a catalog, loading the catalog from it (env DEEPLAKED_ATTACH=true)")
	durability := flag.String("durability", envOr("DEEPLAKED_DURABILITY", "local"),
		"when a commit is acknowledged: local (once in the data directory; the storage location gets it in the background) or bucket (once in the storage location; needed for several servers on one location) (env DEEPLAKED_DURABILITY)")
	refresh := flag.Duration("refresh-interval", envDuration("DEEPLAKED_REFRESH_INTERVAL", storage.DefaultRefreshInterval),
		"how often to apply what other servers of the --storage location committed (env DEEPLAKED_REFRESH_INTERVAL)")
	retention := flag.Duration("version-retention", envDuration("DEEPLAKED_VERSION_RETENTION", storage.DefaultVersionRetention),
		"how long old table versions are kept for reading past versions; VACUUM expires older ones, 0s keeps only the current version (env DEEPLAKED_VERSION_RETENTION)")
	auth := flag.String("auth", envOr("DEEPLAKED_AUTH", ""), "client authentication: trust, scram, md5 (answered with SCRAM) or password; default trust on a loopback --listen, scram otherwise (env DEEPLAKED_AUTH)")
	bootstrapUser := flag.String("bootstrap-user", envOr("DEEPLAKED_BOOTSTRAP_USER", server.DefaultBootstrapUser),
		"superuser created on start, with the password in env DEEPLAKED_BOOTSTRAP_PASSWORD, if it does not exist (env DEEPLAKED_BOOTSTRAP_USER)")
	tlsCert := flag.String("tls-cert", envOr("DEEPLAKED_TLS_CERT", ""), "PEM certificate file; with --tls-key, clients may connect over TLS (env DEEPLAKED_TLS_CERT)")
	tlsKey := flag.String("tls-key", envOr("DEEPLAKED_TLS_KEY", ""), "PEM private key file (env DEEPLAKED_TLS_KEY)")
	maxConns := flag.Int("max-connections", envInt("DEEPLAKED_MAX_CONNECTIONS", server.DefaultMaxConnections), "most authenticated client connections at once (env DEEPLAKED_MAX_CONNECTIONS)")
	reservedConns := flag.Int("superuser-reserved-connections", envCount("DEEPLAKED_SUPERUSER_RESERVED_CONNECTIONS", server.DefaultSuperuserReservedConnections),
		"how many of the --max-connections slots only superusers may take (env DEEPLAKED_SUPERUSER_RESERVED_CONNECTIONS)")
	authTimeout := flag.Duration("authentication-timeout", envDuration("DEEPLAKED_AUTHENTICATION_TIMEOUT", server.DefaultAuthenticationTimeout),
		"longest time a connection may take to authenticate before it is closed, 1s to 600s (env DEEPLAKED_AUTHENTICATION_TIMEOUT)")
	unixDir := flag.String("unix-socket-dir", envOr("DEEPLAKED_UNIX_SOCKET_DIR", ""), "directory for the Unix socket .s.PGSQL.<port> (psql -h DIR); empty for none (env DEEPLAKED_UNIX_SOCKET_DIR)")
	debugListen := flag.String("debug-listen", envOr("DEEPLAKED_DEBUG_LISTEN", ""), "address of an HTTP listener serving Go's /debug/pprof profiles; empty for none (env DEEPLAKED_DEBUG_LISTEN)")
	memLimit := flag.String("memory-limit", envOr("DEEPLAKED_MEMORY_LIMIT", ""), "the server's memory limit, such as 4GB or 512MB; default 3/4 of physical memory or of the cgroup's limit (env DEEPLAKED_MEMORY_LIMIT)")
	flag.Parse()
	memoryLimit := server.DefaultMemoryLimit()
	if *memLimit != "" {
		kb, ok := types.MemorySettingKB(*memLimit)
		if !ok || kb < 1<<10 || kb > 1<<40 {
			fmt.Fprintf(os.Stderr, "deeplaked: --memory-limit %q: want a size from 1MB to 1PB, such as 4GB or 512MB\n", *memLimit)
			os.Exit(2)
		}
		memoryLimit = kb << 10
	}
	cacheKB, ok := types.MemorySettingKB(*cacheSizeFlag)
	if !ok || cacheKB < 64<<10 || cacheKB > 1<<40 {
		fmt.Fprintf(os.Stderr, "deeplaked: --cache-size %q: want a size from 64MB to 1PB, such as 10GB or 512MB\n", *cacheSizeFlag)
		os.Exit(2)
	}
	// Go's runtime collects harder near its limit and returns freed
	// memory to the system; three eighths are left for what it does not
	// count (the SQL parser's C memory, thread stacks) and for the garbage
	// a growing buffer leaves between collections while other processes
	// hold the CPU. At 9/10, four recursive queries at the operators'
	// budget peaked at 460-493 MB under a 512 MB limit; at 3/4, at 451 MB
	// (test/robust TestConcurrentRecursive), but a string_agg past its
	// budget peaked at 539 MB in a full test run (TestStringAggHuge); at
	// 5/8 they peak at 358 and 387 MB alone (413 and 431 at 3/4).
	debug.SetMemoryLimit(memoryLimit / 8 * 5)
	if *retention == 0 {
		*retention = -1 // storage reads 0 as "the default"
	}

	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	slog.SetDefault(logger)

	if *debugListen != "" {
		go func() {
			// http.DefaultServeMux holds only net/http/pprof's handlers.
			err := http.ListenAndServe(*debugListen, nil)
			logger.Error("debug listener stopped", "listen", *debugListen, "err", err)
		}()
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	srv, err := server.Start(ctx, server.Options{
		Listen:        *listen,
		UnixSocketDir: *unixDir,
		DataDir:       *dataDir,
		Storage:       *storageURL,
		S3Endpoint:    *s3Endpoint,
		CacheDir:      *cacheDir,
		CacheSize:     cacheKB << 10,
		Attach:        *attach,
		Durability:    *durability,

		RefreshInterval: *refresh,
		Logger:          logger,

		VersionRetention: *retention,

		Auth:              *auth,
		BootstrapUser:     *bootstrapUser,
		BootstrapPassword: os.Getenv("DEEPLAKED_BOOTSTRAP_PASSWORD"),
		TLSCert:           *tlsCert,
		TLSKey:            *tlsKey,
		MaxConnections:    max(*maxConns, -1),

		MemoryLimit:                  memoryLimit,
		SuperuserReservedConnections: reservedConnsOption(*reservedConns),
		AuthenticationTimeout:        *authTimeout,
		CheckDataDirPermissions:      true,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "deeplaked:", err)
		os.Exit(1)
	}
	<-ctx.Done()
	logger.Info("deeplaked shutting down")
	if err := srv.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "deeplaked: shutdown:", err)
		os.Exit(1)
	}
}
