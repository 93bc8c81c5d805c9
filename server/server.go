// Package server assembles a running deeplaked: storage, the session engine
// and the wire front end on a listener. cmd/deeplaked and the tests start
// servers through it.
package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/deeplaked/deeplaked/session"
	"github.com/deeplaked/deeplaked/storage"
	"github.com/deeplaked/deeplaked/types"
	"github.com/deeplaked/deeplaked/wire"
)

// Options configure a server.
type Options struct {
	// Listen is the TCP address to listen on ("127.0.0.1:0" picks a port).
	Listen string
	// UnixSocketDir, when set, is a directory where the server also
	// listens on the Unix socket .s.PGSQL.<port>, as PostgreSQL's
	// unix_socket_directories: psql -h DIR and libpq's host=DIR reach it.
	// Clients on the same machine get about twice the loopback TCP rate
	// through it. It authenticates as the TCP listener does.
	UnixSocketDir string
	// DataDir holds the catalog and the table data; created (mode 0700)
	// if missing.
	DataDir string
	// CheckDataDirPermissions refuses to start on a data directory that
	// group can write or others can reach, as PostgreSQL does (0700 and
	// 0750 pass): the catalog holds every role's password verifier.
	// cmd/deeplaked sets it; a library user whose directory sits in a
	// private parent (testing.T.TempDir makes 0755 ones) may leave it off.
	CheckDataDirPermissions bool
	// InMemory keeps everything in memory (tests); DataDir is ignored.
	InMemory bool
	// Storage says where table data lives: empty for DataDir/objects, or
	// "s3://bucket/prefix" for an S3 bucket, with optional settings
	// ("?read_part_size=8MB&read_concurrency=64", see parseStorageSpec;
	// credentials and region from the standard AWS environment). The
	// catalog stays in DataDir.
	Storage string
	// S3Endpoint is the URL of an S3-compatible server; empty means AWS.
	S3Endpoint string
	// CacheDir, with Storage set, is a local directory (created 0700)
	// that keeps the chunk objects read from Storage, so that the next
	// pass over a table reads the disk (storage.DiskCache). It is not
	// used for the data directory's own objects, already on local disk.
	CacheDir string
	// CacheSize is the most bytes of files CacheDir holds; 0 means
	// DefaultCacheSize.
	CacheSize int64
	// Attach lets a new data directory serve a Storage location that
	// already holds a catalog, loading it from the location
	// (storage.Options.Attach).
	Attach bool
	// Durability says when a commit is acknowledged: "local" (the
	// default) or "bucket" (storage.Durability).
	Durability string
	// RefreshInterval is how often the server applies what other
	// servers of its storage location committed; 0 means
	// storage.DefaultRefreshInterval.
	RefreshInterval time.Duration
	// FlushRows overrides storage.DefaultFlushRows (tests use small values
	// so that rows reach chunks quickly).
	FlushRows int
	// VersionRetention is how long old table versions are kept (see
	// storage.Options.VersionRetention).
	VersionRetention time.Duration
	Logger           *slog.Logger

	// Auth is "trust", "scram", "md5" (runs SCRAM, see docs/protocol.md)
	// or "password"; empty means trust when Listen is a loopback address
	// and scram otherwise.
	Auth string
	// BootstrapUser and BootstrapPassword make a superuser on start when
	// the password is set and the role does not exist;
	// BootstrapUser defaults to DefaultBootstrapUser.
	BootstrapUser     string
	BootstrapPassword string
	// TLSCert and TLSKey are PEM files; when set, clients may use TLS.
	TLSCert, TLSKey string
	// MaxConnections bounds the authenticated client connections; 0
	// means DefaultMaxConnections, negative means no limit. Connections
	// still in startup or authentication do not count.
	MaxConnections int
	// MemoryLimit is the server's memory limit in bytes; 0 means
	// DefaultMemoryLimit. A quarter of it bounds what query operators
	// hold, all sessions together (beyond it a query fails with 53200);
	// the command also makes it Go's runtime limit.
	MemoryLimit int64
	// SuperuserReservedConnections is how many of the MaxConnections
	// slots are kept for superusers (PostgreSQL's
	// superuser_reserved_connections); 0 means
	// DefaultSuperuserReservedConnections, negative none. It must be
	// less than MaxConnections.
	SuperuserReservedConnections int
	// AuthenticationTimeout closes a connection that has not
	// authenticated within it of connecting (PostgreSQL's
	// authentication_timeout); 0 means DefaultAuthenticationTimeout.
	AuthenticationTimeout time.Duration
}

// Server is a running deeplaked.
type Server struct {
	db     *storage.DB
	cache  *storage.DiskCache // nil without Options.CacheDir
	wire   *wire.Server
	ln     net.Listener
	unix   net.Listener // nil without Options.UnixSocketDir
	served chan error
	// closeOnce makes Close idempotent; closeErr is its outcome.
	closeOnce sync.Once
	closeErr  error
	logger    *slog.Logger
}

// Start opens storage and begins serving connections.
func Start(ctx context.Context, opts Options) (*Server, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	if !opts.InMemory && opts.CheckDataDirPermissions {
		if err := storage.CheckDataDir(opts.DataDir); err != nil {
			return nil, err
		}
	}
	method, err := authMethod(opts.Auth, opts.Listen)
	if err != nil {
		return nil, err
	}
	tlsConfig, err := loadTLS(opts.TLSCert, opts.TLSKey)
	if err != nil {
		return nil, err
	}
	conns, err := connectionLimits(opts)
	if err != nil {
		return nil, err
	}
	store, err := openObjectStore(ctx, opts.Storage, opts.S3Endpoint)
	if err != nil {
		return nil, err
	}
	cache, err := openCache(store, opts, logger)
	if err != nil {
		return nil, err
	}
	started := false
	if cache != nil {
		store = cache.Store()
		defer func() {
			if !started {
				cache.Close() // unlocks the directory
			}
		}()
	}
	durability, err := storage.ParseDurability(opts.Durability)
	if err != nil {
		return nil, err
	}
	db, err := storage.Open(storage.Options{Dir: opts.DataDir, InMemory: opts.InMemory, Store: store, Location: opts.Storage, Logger: logger, FlushRows: opts.FlushRows, VersionRetention: opts.VersionRetention,
		Attach: opts.Attach, Durability: durability, RefreshInterval: opts.RefreshInterval})
	if err != nil {
		return nil, fmt.Errorf("opening storage in %s: %w", opts.DataDir, err)
	}
	if err := bootstrapRole(db, method, opts.BootstrapUser, opts.BootstrapPassword, logger); err != nil {
		db.Close()
		return nil, err
	}
	var mockKey []byte
	if !opts.InMemory {
		if mockKey, err = loadMockAuthKey(opts.DataDir); err != nil {
			db.Close()
			return nil, err
		}
	}
	eng := session.NewEngine(db, logger)
	memLimit := cmp.Or(opts.MemoryLimit, DefaultMemoryLimit())
	eng.SetMemoryLimit(memLimit)
	eng.AuthEnabled = method != wire.AuthTrust
	// As the quick start connects to any database name, trust on a
	// loopback listener creates a missing database on first connection.
	eng.CreateDatabases = method == wire.AuthTrust && isLoopback(opts.Listen)
	for name, v := range map[string]string{
		"max_connections":                strconv.Itoa(conns.max),
		"superuser_reserved_connections": strconv.Itoa(conns.reserved),
		"authentication_timeout":         strconv.FormatInt(conns.authTimeout.Milliseconds(), 10),
	} {
		if err := eng.SetServerSetting(name, v); err != nil {
			db.Close()
			return nil, err
		}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", opts.Listen)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("listening on %s: %w", opts.Listen, err)
	}
	s := &Server{db: db, cache: cache, ln: ln, served: make(chan error, 2), logger: logger}
	if opts.UnixSocketDir != "" {
		if s.unix, err = listenUnix(ctx, opts.UnixSocketDir, ln.Addr()); err != nil {
			ln.Close()
			db.Close()
			return nil, err
		}
	}
	s.wire = wire.NewServer(engineAdapter{eng}, wire.Options{
		Logger:                       logger,
		Auth:                         method,
		Roles:                        roleSource{db},
		TLS:                          tlsConfig,
		MaxConnections:               conns.max,
		SuperuserReservedConnections: conns.reserved,
		AuthenticationTimeout:        conns.authTimeout,
		MockAuthKey:                  mockKey,
	})
	go func() { s.served <- s.wire.Serve(ln) }()
	if s.unix != nil {
		go func() { s.served <- s.wire.Serve(s.unix) }()
		logger.Info("deeplaked listening", "socket", s.unix.Addr().String())
	}
	dir := opts.DataDir
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if opts.InMemory {
		dir = "(memory)"
	}
	logger.Info("deeplaked listening", "addr", ln.Addr().String(), "data_dir", dir, "storage", cmp.Or(opts.Storage, "local"), "auth", method.String(), "tls", tlsConfig != nil, "memory_limit", memLimit)
	started = true
	return s, nil
}

// openObjectStore returns the object store that spec names, or nil for
// the default under the data directory.
func openObjectStore(ctx context.Context, spec, endpoint string) (storage.ObjectStore, error) {
	if spec == "" {
		if endpoint != "" {
			return nil, errors.New("an S3 endpoint is set but storage is not s3://bucket/prefix")
		}
		return nil, nil
	}
	opts, err := parseStorageSpec(spec)
	if err != nil {
		return nil, err
	}
	opts.Endpoint = endpoint
	st, err := storage.NewS3Store(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("storage %s: %w", spec, err)
	}
	return st, nil
}

// DefaultCacheSize is Options.CacheSize's default: 10 GiB.
const DefaultCacheSize = 10 << 30

// openCache opens the disk cache of store that opts ask for, or returns
// nil: none asked, or store is the data directory's (nil).
func openCache(store storage.ObjectStore, opts Options, logger *slog.Logger) (*storage.DiskCache, error) {
	if opts.CacheDir == "" {
		return nil, nil
	}
	if store == nil {
		logger.Warn("cache directory unused: table data is in the data directory, on local disk already", "cache_dir", opts.CacheDir)
		return nil, nil
	}
	size := cmp.Or(opts.CacheSize, DefaultCacheSize)
	if size < 0 {
		return nil, fmt.Errorf("cache size %d: want a positive number of bytes", size)
	}
	cache, err := storage.NewDiskCache(store, opts.CacheDir, size, storage.DiskCacheOptions{Logger: logger})
	if err != nil {
		return nil, err
	}
	st := cache.Stats()
	logger.Info("disk cache", "cache_dir", opts.CacheDir, "cache_size", size, "files", st.Files, "bytes", st.Bytes)
	return cache, nil
}

// parseStorageSpec reads "s3://bucket/prefix[?setting=value&...]". The
// settings: read_part_size, the size of the parts a chunk is read in at
// once (a memory setting: "8MB"; a number alone is kB, as in
// postgresql.conf), and read_concurrency, the most reads of one reader in
// flight (see storage.S3Options).
func parseStorageSpec(spec string) (storage.S3Options, error) {
	u, err := url.Parse(spec)
	if err != nil || u.Scheme != "s3" || u.Host == "" || u.User != nil {
		return storage.S3Options{}, fmt.Errorf("storage %q: want s3://bucket/prefix, or empty for the data directory", spec)
	}
	opts := storage.S3Options{Bucket: u.Host, Prefix: strings.Trim(u.Path, "/")}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return opts, fmt.Errorf("storage %q: %w", spec, err)
	}
	for k, vs := range q {
		v := vs[len(vs)-1]
		switch k {
		case "read_part_size":
			kb, ok := types.MemorySettingKB(v)
			if !ok || kb < 64 || kb > 1<<20 {
				return opts, fmt.Errorf("storage %q: read_part_size %q: want a size from 64kB to 1GB", spec, v)
			}
			opts.ReadPartSize = kb << 10
		case "read_concurrency":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1024 {
				return opts, fmt.Errorf("storage %q: read_concurrency %q: want a number from 1 to 1024", spec, v)
			}
			opts.ReadConcurrency = n
		default:
			return opts, fmt.Errorf("storage %q: unknown setting %q (known: read_part_size, read_concurrency)", spec, k)
		}
	}
	return opts, nil
}

// listenUnix listens on DIR/.s.PGSQL.<port>, the port being tcp's, the
// name PostgreSQL's clients look for. A socket file left by a server that
// is gone (nothing answers on it) is replaced; a live one is an error.
func listenUnix(ctx context.Context, dir string, tcp net.Addr) (net.Listener, error) {
	ta, ok := tcp.(*net.TCPAddr)
	if !ok {
		return nil, fmt.Errorf("unix socket: no port in %s", tcp)
	}
	path := filepath.Join(dir, fmt.Sprintf(".s.PGSQL.%d", ta.Port))
	if _, err := os.Stat(path); err == nil {
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("unix socket %s: another server is listening on it", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("unix socket %s: removing a stale one: %w", path, err)
		}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o777); err != nil { // as PostgreSQL's unix_socket_permissions
		ln.Close()
		return nil, fmt.Errorf("unix socket %s: %w", path, err)
	}
	return ln, nil
}

// UnixSocket returns the path of the Unix socket, or "" without one.
func (s *Server) UnixSocket() string {
	if s.unix == nil {
		return ""
	}
	return s.unix.Addr().String()
}

// Addr returns the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// DB returns the server's storage.
func (s *Server) DB() *storage.DB { return s.db }

// Close stops accepting connections, ends the open ones and closes storage.
// Every acknowledged write is already durable; Close only releases resources.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Server) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.wire.Shutdown(ctx)
	_ = s.ln.Close()
	if serr := <-s.served; serr != nil && !errors.Is(serr, net.ErrClosed) && err == nil {
		err = serr
	}
	if s.unix != nil {
		_ = s.unix.Close() // removes the socket file
		if serr := <-s.served; serr != nil && !errors.Is(serr, net.ErrClosed) && err == nil {
			err = serr
		}
	}
	if cerr := s.db.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if s.cache != nil {
		_ = s.cache.Close()
	}
	return err
}

// engineAdapter presents session.Engine as wire.Engine.
type engineAdapter struct{ eng *session.Engine }

// NewSession connects to the database the client named; one that does
// not exist is an error the wire layer sends as FATAL (3D000).
func (a engineAdapter) NewSession(info wire.StartupInfo) (wire.Session, error) {
	s, err := a.eng.Connect(info.User, info.Database)
	if err != nil {
		return nil, err
	}
	return s, nil
}
