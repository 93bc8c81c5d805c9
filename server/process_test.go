package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// buildBinary compiles cmd/deeplaked once per test run.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "deeplaked")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/deeplaked/deeplaked/cmd/deeplaked")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

type proc struct {
	cmd  *exec.Cmd
	logs chan string
}

// startProcess runs the binary and waits for its "listening" log line.
func startProcess(t *testing.T, bin string, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, logs: make(chan string, 100)}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			select {
			case p.logs <- sc.Text():
			default:
			}
		}
		close(p.logs)
	}()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-p.logs:
			if !ok {
				t.Fatal("server exited before listening")
			}
			if strings.Contains(line, "listening") {
				return p
			}
		case <-deadline:
			cmd.Process.Kill()
			t.Fatal("server did not log that it listens")
		}
	}
}

func TestFlagsEnvAndSignals(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()

	// Environment variables choose the address and data directory.
	addr := freePort(t)
	dataDir := filepath.Join(dir, "from-env")
	p := startProcess(t, bin, []string{"DEEPLAKED_LISTEN=" + addr, "DEEPLAKED_DATA_DIR=" + dataDir})
	conn := connect(t, addr)
	mustExec(t, conn, "CREATE TABLE e (x int)")
	mustExec(t, conn, "INSERT INTO e VALUES (1), (2)")
	conn.Close(context.Background())
	if _, err := os.Stat(dataDir); err != nil {
		t.Errorf("data dir from DEEPLAKED_DATA_DIR not created: %v", err)
	}
	// SIGTERM stops it cleanly.
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}

	// Flags override the environment.
	addr2 := freePort(t)
	p = startProcess(t, bin, []string{"DEEPLAKED_LISTEN=127.0.0.1:1", "DEEPLAKED_DATA_DIR=/nonexistent/x"},
		"--listen", addr2, "--data-dir", dataDir)
	conn = connect(t, addr2)
	if rows := queryText(t, conn, "SELECT sum(x) FROM e"); rows[0][0] != "3" {
		t.Errorf("after restart with flags: %v", rows)
	}
	conn.Close(context.Background())
	p.cmd.Process.Signal(syscall.SIGINT)
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("exit after SIGINT: %v", err)
	}

	// No flags: 127.0.0.1:5433 and ./deeplake-data under the working directory.
	if ln, err := net.Listen("tcp", "127.0.0.1:5433"); err == nil {
		ln.Close()
		cmd := exec.Command(bin)
		cmd.Dir = dir
		stderr, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(stderr).ReadString('\n')
		if !strings.Contains(line, "127.0.0.1:5433") {
			t.Errorf("default listen line: %q", line)
		}
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if _, err := os.Stat(filepath.Join(dir, "deeplake-data")); err != nil {
			t.Errorf("default data dir: %v", err)
		}
	}
}

// TestKill9LosesNoAcknowledgedWrite inserts rows one statement at a time,
// kills the server with SIGKILL mid-stream, restarts it and checks that
// every insert that was acknowledged is there.
func TestKill9LosesNoAcknowledgedWrite(t *testing.T) {
	bin := buildBinary(t)
	dataDir := filepath.Join(t.TempDir(), "data") // made 0700 by the server
	addr := freePort(t)
	p := startProcess(t, bin, nil, "--listen", addr, "--data-dir", dataDir)
	conn := connect(t, addr)
	mustExec(t, conn, "CREATE TABLE k (id bigint PRIMARY KEY, payload text, v float32[4])")

	acked := make(chan int64, 100000)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := int64(1); ; i++ {
			q := fmt.Sprintf("INSERT INTO k VALUES (%d, 'row %d', '{1,2,3,%d}')", i, i, i)
			if _, err := conn.Exec(context.Background(), q); err != nil {
				return
			}
			acked <- i
			if i%50 == 0 {
				// Multi-row statements too, acknowledged as a unit.
				q := fmt.Sprintf("INSERT INTO k VALUES (%d, 'bulk', NULL), (%d, 'bulk', NULL)", -i, -i-1)
				if _, err := conn.Exec(context.Background(), q); err != nil {
					return
				}
				acked <- -i
				acked <- -i - 1
			}
		}
	}()
	time.Sleep(1500 * time.Millisecond)
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
	<-done
	close(acked)
	var ids []int64
	for id := range acked {
		ids = append(ids, id)
	}
	if len(ids) < 10 {
		t.Fatalf("only %d inserts acknowledged before the kill", len(ids))
	}

	addr = freePort(t)
	p = startProcess(t, bin, nil, "--listen", addr, "--data-dir", dataDir)
	defer func() { p.cmd.Process.Signal(syscall.SIGTERM); p.cmd.Wait() }()
	conn2 := connect(t, addr)
	defer conn2.Close(context.Background())
	present := make(map[int64]bool)
	rows, err := conn2.Query(context.Background(), "SELECT id FROM k")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		present[id] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if !present[id] {
			t.Errorf("acknowledged row %d lost after kill -9", id)
		}
	}
	t.Logf("%d acknowledged inserts, %d rows after restart", len(ids), len(present))
	// The table still accepts writes and enforces its key.
	if _, err := conn2.Exec(context.Background(), fmt.Sprintf("INSERT INTO k VALUES (%d, 'dup', NULL)", ids[0])); err == nil {
		t.Errorf("duplicate key accepted after recovery")
	}
}

var _ = pgx.Connect
