// Command durability measures what --durability bucket costs against
// --durability local, on an S3-compatible server (versitygw on 127.0.0.1):
// the latency of single-row autocommit INSERTs (p50, p99) and the
// throughput of COPY FROM STDIN, with pgx, one connection. Both deeplaked
// servers run at once, each on its own prefix of one bucket and its own
// data directory; local is the anchor, and PostgreSQL 15 (-pg) runs the
// same statements when given.
//
//	go run ./bench/scale/durability -deeplaked BIN [-pg DSN]
//	bench/scale/durability/run.sh          # builds, and starts PostgreSQL 15
//
// -s3-latency delays every request to the S3 server by a fixed time, a
// model of a remote S3 (a PUT there takes 20–50 ms; versitygw on the same
// machine answers in about a millisecond). -mode contend runs several
// servers on one location, committing at once (contend.go). docs/scale.md
// has the figures.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/deeplaked/deeplaked/internal/s3test"
)

const (
	bucket    = "dlbench"
	accessKey = "durability-bench"
	secretKey = "durability-bench-secret"
)

var (
	deeplakedBin = flag.String("deeplaked", "", "the deeplaked binary (go build ./cmd/deeplaked)")
	versitygwBin = flag.String("versitygw", "", "the versitygw binary (default: as the S3 tests find it)")
	pgDSN        = flag.String("pg", "", "PostgreSQL connection string; empty to leave PostgreSQL out")
	inserts      = flag.Int("inserts", 2000, "single-row autocommit INSERTs per round")
	rows         = flag.Int("rows", 1_000_000, "rows of each COPY")
	rounds       = flag.Int("rounds", 2, "rounds; each runs the INSERTs and one COPY on every server in turn")
	s3Latency    = flag.Duration("s3-latency", 0, "delay before each request reaches the S3 server")
	mode         = flag.String("mode", "durability", "durability: bucket against local; contend: servers committing to one location at once")
	servers      = flag.String("servers", "1,2,4", "contend: the numbers of servers on one location to measure, in turn")
	seconds      = flag.Duration("seconds", 10*time.Second, "contend: how long the servers commit")
	conns        = flag.Int("conns", 1, "contend: connections per server, each committing one row at a time")
	workDir      = flag.String("dir", "", "where the work directory goes (default $TMPDIR)")
	machine      = flag.String("machine", "", "machine description for the report")
)

// target is one system under test.
type target struct {
	name   string
	dsn    string
	prefix string // the S3 prefix of a deeplaked; empty for PostgreSQL
	// durability is a deeplaked's --durability.
	durability string
	proc       *exec.Cmd
	// lat holds every INSERT's latency, of all rounds.
	lat []time.Duration
	// copyRate holds each round's COPY: rows/s.
	copyRate []float64
	// entries and entryBytes are the log entries in the bucket once
	// the server stopped, and their bytes.
	entries    int
	entryBytes int64
	// uploadLag is the longest a server's log in the bucket kept growing
	// after its last INSERT was acknowledged.
	uploadLag time.Duration
}

func main() {
	flag.Parse()
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "durability:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	if *deeplakedBin == "" {
		return errors.New("-deeplaked is required (go build -o BIN ./cmd/deeplaked)")
	}
	if *versitygwBin == "" {
		b, err := s3test.Binary()
		if err != nil {
			return err
		}
		*versitygwBin = b
	}
	work, err := os.MkdirTemp(*workDir, "deeplaked-durability-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	s3Dir := filepath.Join(work, "s3")
	if err := os.MkdirAll(s3Dir, 0o700); err != nil {
		return err
	}
	gw, endpoint, err := startVersitygw(work, s3Dir)
	if err != nil {
		return err
	}
	defer stop(gw)
	if *mode == "contend" {
		return contend(ctx, work, s3Dir, endpoint)
	}
	if *s3Latency > 0 {
		px, err := startProxy(endpoint, *s3Latency)
		if err != nil {
			return err
		}
		endpoint = px.endpoint
	}

	var targets []*target
	for _, d := range []string{"local", "bucket"} {
		t := &target{name: d, prefix: d, durability: d}
		if err := startDeeplaked(work, endpoint, t); err != nil {
			return err
		}
		defer stop(t.proc)
		targets = append(targets, t)
	}
	if *pgDSN != "" {
		targets = append(targets, &target{name: "PostgreSQL 15", dsn: *pgDSN})
	}

	copyData := copyText(*rows)
	for _, t := range targets {
		if err := setup(ctx, t); err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
	}
	for r := range *rounds {
		for _, t := range targets {
			settle(s3Dir, targets)
			if err := insertRound(ctx, t, r); err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			t.uploadLag = max(t.uploadLag, settle(s3Dir, targets))
			if err := copyRound(ctx, t, r, copyData); err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
		}
	}
	for _, t := range targets {
		if t.proc != nil {
			stop(t.proc) // a local server uploads what is still queued
			t.entries, t.entryBytes = logEntries(s3Dir, t.prefix)
		}
	}
	report(targets, len(copyData))
	return nil
}

// startVersitygw runs versitygw over dir on a free port of 127.0.0.1.
func startVersitygw(work, dir string) (*exec.Cmd, string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(*versitygwBin, "--port", addr, "--quiet", "posix", dir)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+accessKey, "ROOT_SECRET_KEY="+secretKey)
	if err := startLogged(cmd, filepath.Join(work, "versitygw.log")); err != nil {
		return nil, "", err
	}
	if err := waitListening(addr, cmd); err != nil {
		stop(cmd)
		return nil, "", fmt.Errorf("versitygw: %w", err)
	}
	return cmd, "http://" + addr, nil
}

// startDeeplaked runs deeplaked with its tables under s3://bucket/t.prefix
// and durability t.name.
func startDeeplaked(work, endpoint string, t *target, extra ...string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(*deeplakedBin, "--listen", addr, "--data-dir", filepath.Join(work, "dl-"+t.name),
		"--storage", "s3://"+bucket+"/"+t.prefix, "--s3-endpoint", endpoint, "--durability", t.durability)
	cmd.Args = append(cmd.Args, extra...)
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+accessKey, "AWS_SECRET_ACCESS_KEY="+secretKey,
		"AWS_REGION=us-east-1", "AWS_PROFILE=", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null")
	if err := startLogged(cmd, filepath.Join(work, "deeplaked-"+t.name+".log")); err != nil {
		return err
	}
	if err := waitListening(addr, cmd); err != nil {
		stop(cmd)
		log, _ := os.ReadFile(filepath.Join(work, "deeplaked-"+t.name+".log"))
		return fmt.Errorf("deeplaked %s: %w\n%s", t.name, err, log)
	}
	t.proc = cmd
	t.dsn = "postgres://bench@" + addr + "/bench"
	return nil
}

func startLogged(cmd *exec.Cmd, logPath string) error {
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	return nil
}

func waitListening(addr string, cmd *exec.Cmd) error {
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			// Wait has the process now; stop waits on exited.
			waits[cmd] = exited
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("exited before listening on %s: %v", addr, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	cmd.Process.Kill()
	<-exited
	return fmt.Errorf("not listening on %s after 60 s", addr)
}

// waits holds the result of each started process's Wait.
var waits = map[*exec.Cmd]chan error{}

// stop ends a process started here with SIGTERM (SIGKILL after a minute)
// and waits for it; a second stop does nothing.
func stop(cmd *exec.Cmd) {
	ch, ok := waits[cmd]
	if !ok {
		return
	}
	delete(waits, cmd)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-ch:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-ch
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// logEntries counts the commit log entries under prefix in versitygw's
// directory, and their bytes.
func logEntries(s3Dir, prefix string) (n int, size int64) {
	es, _ := os.ReadDir(filepath.Join(s3Dir, bucket, prefix, "deeplake", "log"))
	for _, e := range es {
		if fi, err := e.Info(); err == nil {
			size += fi.Size()
		}
	}
	return len(es), size
}

// settle waits until no deeplaked's log in the bucket has grown for half
// a second (a local server uploads its entries after acknowledging them),
// so that one measurement does not run beside the previous one's
// uploads. It returns how long the logs kept growing.
func settle(s3Dir string, ts []*target) time.Duration {
	count := func() (n int) {
		for _, t := range ts {
			if t.prefix != "" {
				c, _ := logEntries(s3Dir, t.prefix)
				n += c
			}
		}
		return n
	}
	start := time.Now()
	last, changed := count(), start
	for deadline := start.Add(5 * time.Minute); time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		if n := count(); n != last {
			last, changed = n, time.Now()
		} else if time.Since(changed) >= 500*time.Millisecond {
			break
		}
	}
	return changed.Sub(start)
}

func setup(ctx context.Context, t *target) error {
	conn, err := pgx.Connect(ctx, t.dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for r := range *rounds {
		for _, tbl := range []string{"ins", "cp"} {
			if _, err := conn.Exec(ctx, fmt.Sprintf("DROP TABLE IF EXISTS %s%d", tbl, r)); err != nil {
				return err
			}
			if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE TABLE %s%d (id bigint, a int, b float8, c text)", tbl, r)); err != nil {
				return err
			}
		}
	}
	return nil
}

// insertRound runs the autocommit INSERTs of round r, each timed, after
// 50 not timed.
func insertRound(ctx context.Context, t *target, r int) error {
	conn, err := pgx.Connect(ctx, t.dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	q := fmt.Sprintf("INSERT INTO ins%d VALUES ($1, $2, $3, $4)", r)
	const warm = 50
	for i := range *inserts + warm {
		start := time.Now()
		if _, err := conn.Exec(ctx, q, int64(i), int32(i), float64(i)/3, "row "+strconv.Itoa(i)); err != nil {
			return err
		}
		if i >= warm {
			t.lat = append(t.lat, time.Since(start))
		}
	}
	var n int64
	if err := conn.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM ins%d", r)).Scan(&n); err != nil {
		return err
	}
	if n != int64(*inserts+warm) {
		return fmt.Errorf("ins%d has %d rows, want %d", r, n, *inserts+warm)
	}
	fmt.Fprintf(os.Stderr, "%-14s round %d: %d INSERTs, p50 %v\n", t.name, r+1, *inserts, percentile(t.lat[len(t.lat)-*inserts:], 50))
	return nil
}

// copyRound runs the COPY of round r.
func copyRound(ctx context.Context, t *target, r int, data []byte) error {
	conn, err := pgx.Connect(ctx, t.dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	start := time.Now()
	tag, err := conn.PgConn().CopyFrom(ctx, bytes.NewReader(data), fmt.Sprintf("COPY cp%d FROM STDIN", r))
	if err != nil {
		return err
	}
	s := time.Since(start).Seconds()
	if tag.RowsAffected() != int64(*rows) {
		return fmt.Errorf("COPY: %s, want %d rows", tag, *rows)
	}
	var n int64
	if err := conn.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM cp%d", r)).Scan(&n); err != nil {
		return err
	}
	if n != int64(*rows) {
		return fmt.Errorf("cp%d has %d rows, want %d", r, n, *rows)
	}
	t.copyRate = append(t.copyRate, float64(*rows)/s)
	fmt.Fprintf(os.Stderr, "%-14s round %d: COPY of %d rows in %.2f s\n", t.name, r+1, *rows, s)
	return nil
}

// copyText returns n rows of COPY text: id, a, b, c.
func copyText(n int) []byte {
	var b []byte
	for i := range n {
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, '\t')
		b = strconv.AppendInt(b, int64(i%1000003), 10)
		b = append(b, '\t')
		b = strconv.AppendFloat(b, float64(i)/7, 'g', -1, 64)
		b = append(b, "\tsample-"...)
		b = strconv.AppendInt(b, int64(i*7919%1000000007), 36)
		b = append(b, '\n')
	}
	return b
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/1e6) }

func report(ts []*target, copyBytes int) {
	local, bucketT := ts[0], ts[1]
	var pg *target
	if len(ts) > 2 {
		pg = ts[2]
	}
	fmt.Printf("# --durability bucket against local\n\n")
	fmt.Printf("%s, %d CPUs, %s; %d rounds; S3: versitygw on 127.0.0.1", time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), *machine, *rounds)
	if *s3Latency > 0 {
		fmt.Printf(", each request held %v first", *s3Latency)
	}
	fmt.Printf(".\n\n")
	head := "| measurement | local (anchor) | bucket | bucket / local |"
	sep := "| --- | ---: | ---: | ---: |"
	if pg != nil {
		head += " PostgreSQL 15 | PostgreSQL / local |"
		sep += " ---: | ---: |"
	}
	fmt.Println(head)
	fmt.Println(sep)
	row := func(name string, f func(*target) float64, format func(float64) string) {
		l, b := f(local), f(bucketT)
		line := fmt.Sprintf("| %s | %s | %s | %.2f× |", name, format(l), format(b), b/l)
		if pg != nil {
			p := f(pg)
			line += fmt.Sprintf(" %s | %.2f× |", format(p), p/l)
		}
		fmt.Println(line)
	}
	durMS := func(v float64) string { return ms(time.Duration(v)) }
	n := *inserts * *rounds
	row(fmt.Sprintf("INSERT p50 (%d autocommit, 1 connection)", n), func(t *target) float64 { return float64(percentile(t.lat, 50)) }, durMS)
	row("INSERT p99", func(t *target) float64 { return float64(percentile(t.lat, 99)) }, durMS)
	row("INSERT mean", func(t *target) float64 {
		var sum time.Duration
		for _, d := range t.lat {
			sum += d
		}
		return float64(sum) / float64(len(t.lat))
	}, durMS)
	mb := float64(copyBytes) / float64(*rows) / 1e6
	row(fmt.Sprintf("COPY FROM STDIN, %d rows (median of %d), rows/s", *rows, *rounds), func(t *target) float64 { return median(t.copyRate) },
		func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) })
	row("COPY FROM STDIN, MB/s of COPY text", func(t *target) float64 { return median(t.copyRate) * mb },
		func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) })
	fmt.Printf("\nCOPY text: %.1f MB (%d rows of id bigint, a int, b float8, c text). Log entries in the bucket after both servers stopped: local %d (%.1f MB), bucket %d (%.1f MB).\n",
		float64(copyBytes)/1e6, *rows, local.entries, float64(local.entryBytes)/1e6, bucketT.entries, float64(bucketT.entryBytes)/1e6)
	fmt.Printf("The log in the bucket was complete %.1f s after the last INSERT was acknowledged with local (%.1f s with bucket; the most of the rounds).\n",
		local.uploadLag.Seconds(), bucketT.uploadLag.Seconds())
	fmt.Printf("COPY rows/s per round: local %s; bucket %s", rates(local), rates(bucketT))
	if pg != nil {
		fmt.Printf("; PostgreSQL %s", rates(pg))
	}
	fmt.Println(".")
}

func rates(t *target) string {
	var s []string
	for _, r := range t.copyRate {
		s = append(s, strconv.FormatFloat(r, 'f', 0, 64))
	}
	return strings.Join(s, ", ")
}
