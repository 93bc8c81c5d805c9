package wire

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// runPsql runs the psql client against ts with args and returns its output.
func runPsql(t *testing.T, ts *testServer, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return runPsqlStdin(t, ts, "", args...)
}

// runPsqlStdin runs psql with args and stdin as its standard input.
func runPsqlStdin(t *testing.T, ts *testServer, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	psql, lerr := exec.LookPath("psql")
	if lerr != nil {
		t.Fatal("psql is not installed; ./scripts/test.sh installs it (postgresql-client-15)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	base := []string{"-h", "127.0.0.1", "-p", portOf(ts.addr), "-U", "anyone", "-X", "-v", "ON_ERROR_STOP=1"}
	cmd := exec.CommandContext(ctx, psql, append(append(base, args...), "anydb")...)
	cmd.Env = append(cmd.Environ(), "PGCONNECT_TIMEOUT=5", "PGAPPNAME=psqltest")
	var out, errOut strings.Builder
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// TestPsql runs the real psql client. Its default sslmode=prefer makes every
// connection start with an SSLRequest.
func TestPsql(t *testing.T) {
	ts := startTestServer(t)
	tests := []struct {
		name    string
		args    []string
		stdout  string
		stderr  string
		wantErr bool
	}{
		{name: "select", args: []string{"-At", "-c", "select 1"}, stdout: "1\n"},
		{name: "several statements", args: []string{"-At", "-c", "select 1; rows 3"}, stdout: "1\n0|row 0\n1|row 1\n2|\n"},
		{name: "several commands", args: []string{"-At", "-c", "select 4", "-c", "select 5"}, stdout: "4\n5\n"},
		{name: "aligned output", args: []string{"-c", "rows 2"}, stdout: " n |   t   \n---+-------\n 0 | row 0\n 1 | row 1\n(2 rows)\n\n"},
		{name: "error", args: []string{"-At", "-c", "error 42P01 relation \"nope\" does not exist"}, wantErr: true,
			stderr: "ERROR:  relation \"nope\" does not exist\nDETAIL:  detail of 42P01\nHINT:  hint of 42P01\n"},
		{name: "version", args: []string{"-At", "-c", "select 7", "-c", `\echo :SERVER_VERSION_NAME`}, stdout: "7\n15.0\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, err := runPsql(t, ts, tt.args...)
			if (err != nil) != tt.wantErr {
				t.Fatalf("psql: %v\nstderr: %s", err, stderr)
			}
			if stdout != tt.stdout {
				t.Errorf("stdout = %q, want %q", stdout, tt.stdout)
			}
			if tt.stderr != "" && stderr != tt.stderr {
				t.Errorf("stderr = %q, want %q", stderr, tt.stderr)
			}
		})
	}
	if info := ts.eng.lastInfo(); info.User != "anyone" || info.Database != "anydb" || info.ApplicationName != "psqltest" {
		t.Errorf("psql startup info = %+v", info)
	}
}
