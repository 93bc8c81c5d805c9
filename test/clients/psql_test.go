package clients_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The psql client's tables and the data every Go-side client checks.
const (
	psqlItems = "psql_items"
	psqlCopy  = "psql_copy"
	psqlSeq   = "psql_seq"

	// copyOutCSV is copyInText's rows as COPY ... TO STDOUT (FORMAT csv)
	// writes them; in text format they come back as copyInText.
	copyOutCSV = "10,beta,-0.5,\\x0102,\"[1,2,3]\",\"{0,0.5,1}\",\"{{0,1},{2,3}}\"\n" +
		"11,,,,,,\n" +
		"12,gamma\tdelta,1e+20,\\x,\"[-1,0,1]\",\"{3,2,1}\",\"{{255,0},{0,255}}\"\n"
)

// copyInText is what the clients load with COPY FROM STDIN (text format):
// an escaped tab, NULLs, an empty bytea.
var copyInText = copyInData(10)

// copyInData is copyInText with ids from first.
func copyInData(first int) string {
	return fmt.Sprintf("%d\tbeta\t-0.5\t\\\\x0102\t[1,2,3]\t{0,0.5,1}\t{{0,1},{2,3}}\n", first) +
		fmt.Sprintf("%d\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\n", first+1) +
		fmt.Sprintf("%d\tgamma\\tdelta\t1e+20\t\\\\x\t[-1,0,1]\t{3,2,1}\t{{255,0},{0,255}}\n", first+2)
}

// seqRows is how many rows the cursor step's table holds: (n, 'row n')
// for n from 1, enough for a dozen fetches of 100.
const seqRows = 1200

func seqDDL(name string) string {
	return "CREATE TABLE " + name + " (n int PRIMARY KEY, label text)"
}

// seqRow is a row of the cursor step's table.
type seqRow struct {
	N     int32
	Label string
}

// expectSeq checks that got is the rows first..last of the cursor step's
// table, each once and in order.
func expectSeq(what string, got []seqRow, first, last int) error {
	for i, r := range got {
		if want := (seqRow{int32(first + i), fmt.Sprintf("row %d", first+i)}); r != want {
			return fmt.Errorf("%s: row %d is %v, want %v", what, i, r, want)
		}
	}
	if len(got) != last-first+1 {
		return fmt.Errorf("%s: %d rows, want %d (%d..%d)", what, len(got), last-first+1, first, last)
	}
	return nil
}

func tableDDL(tg target, name string) string {
	weights, pixels := tg.tensorTypes()
	return fmt.Sprintf("CREATE TABLE %s (id int PRIMARY KEY, name text, score float8, payload bytea, "+
		"embedding vector(3), weights %s, pixels %s)", name, weights, pixels)
}

// psql runs psql with the script on its standard input and returns its
// standard output; stderr is part of the error.
func psql(tg target, script string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "psql", append([]string{"-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", tg.dsn()}, args...)...)
	cmd.Stdin = strings.NewReader(script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("psql: %v: %s", err, stderr.String())
	}
	return stdout.String(), nil
}

// firstDiffLine returns the 1-based number of the first line where a and
// b differ.
func firstDiffLine(a, b string) int {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return i + 1
		}
	}
	return min(len(al), len(bl)) + 1
}

func expectOutput(what, got, want string) error {
	if got != want {
		return fmt.Errorf("%s: got %q, want %q", what, got, want)
	}
	return nil
}

// runPsql drives psql 15: variables for parameters (psql 15 has no \bind),
// COPY inline and \copy with files, \d for the catalog,
// LAST_ERROR_SQLSTATE, and SIGINT for cancel.
func runPsql(t *testing.T, tg target) map[string]string {
	needTool(t, "psql", "postgresql-client-15")
	dir := t.TempDir()
	return runSteps(t, map[string]func() error{
		"connect": func() error {
			out, err := psql(tg, "SELECT 1 + 1;\n")
			if err != nil {
				return err
			}
			return expectOutput("SELECT 1 + 1", out, "2\n")
		},
		"create": func() error {
			_, err := psql(tg, fmt.Sprintf("DROP TABLE IF EXISTS %s;\nDROP TABLE IF EXISTS %s;\n%s;\n%s;\n",
				psqlItems, psqlCopy, tableDDL(tg, psqlItems), tableDDL(tg, psqlCopy)))
			return err
		},
		"insert": func() error {
			// psql interpolates its variables as quoted literals (:'name').
			out, err := psql(tg, fmt.Sprintf(`INSERT INTO %s VALUES (:id, :'name', :score, :'payload', :'emb', :'weights', :'pixels');
INSERT INTO %[1]s (id) VALUES (2);
SELECT count(*) FROM %[1]s;
`, psqlItems),
				"-v", "id=1", "-v", "name=alpha 'quoted' é", "-v", "score=1.5", "-v", `payload=\x00ff10`,
				"-v", "emb=[0.5,1,2]", "-v", "weights={1.5,-2,0.25}", "-v", "pixels={{1,2},{3,255}}")
			if err != nil {
				return err
			}
			return expectOutput("count after insert", out, "2\n")
		},
		"select": func() error {
			out, err := psql(tg, fmt.Sprintf("\\pset null '<null>'\nSELECT * FROM %s ORDER BY id;\n", psqlItems))
			if err != nil {
				return err
			}
			return expectOutput("SELECT *", out,
				"1|alpha 'quoted' é|1.5|\\x00ff10|[0.5,1,2]|{1.5,-2,0.25}|{{1,2},{3,255}}\n2|<null>|<null>|<null>|<null>|<null>|<null>\n")
		},
		"cursor": func() error {
			var values []string
			for n := 1; n <= seqRows; n++ {
				values = append(values, fmt.Sprintf("(%d, 'row %d')", n, n))
			}
			if _, err := psql(tg, fmt.Sprintf("DROP TABLE IF EXISTS %[1]s;\n%[2]s;\nINSERT INTO %[1]s VALUES %[3]s;\n",
				psqlSeq, seqDDL(psqlSeq), strings.Join(values, ", "))); err != nil {
				return err
			}
			// With FETCH_COUNT psql reads a SELECT through a cursor:
			// BEGIN (outside a transaction block), DECLARE _psql_cursor NO
			// SCROLL CURSOR FOR ..., FETCH FORWARD 100 until a short
			// batch, CLOSE, COMMIT.
			query := fmt.Sprintf("SELECT n, label FROM %s WHERE n > :after ORDER BY n;\n", psqlSeq)
			out, err := psql(tg, "\\set FETCH_COUNT 100\n"+query+"BEGIN;\n"+query+"COMMIT;\nSELECT 5;\n", "-v", "after=200")
			if err != nil {
				return err
			}
			var want strings.Builder
			for range 2 {
				for n := 201; n <= seqRows; n++ {
					fmt.Fprintf(&want, "%d|row %d\n", n, n)
				}
			}
			want.WriteString("5\n")
			if out != want.String() {
				return fmt.Errorf("FETCH_COUNT 100: %d lines, want %d; first difference at line %d",
					strings.Count(out, "\n"), strings.Count(want.String(), "\n"), firstDiffLine(out, want.String()))
			}
			return nil
		},
		"copy_in": func() error {
			// COPY FROM STDIN with the data inline in the script, and
			// \copy from a CSV file.
			csvFile := filepath.Join(dir, "in.csv")
			if err := os.WriteFile(csvFile, []byte("20,\"from, csv\",2.5,\\x41,\"[4,5,6]\",\"{7,8,9}\",\"{{9,8},{7,6}}\"\n"), 0o644); err != nil {
				return err
			}
			out, err := psql(tg, fmt.Sprintf("COPY %[1]s FROM STDIN;\n%[2]s\\.\n\\copy %[1]s from '%[3]s' with (format csv)\n"+
				"\\pset null '<null>'\nSELECT id, name, score, payload, embedding, weights, pixels FROM %[1]s ORDER BY id;\n",
				psqlCopy, copyInText, csvFile))
			if err != nil {
				return err
			}
			return expectOutput("rows after COPY FROM", out, "10|beta|-0.5|\\x0102|[1,2,3]|{0,0.5,1}|{{0,1},{2,3}}\n"+
				"11|<null>|<null>|<null>|<null>|<null>|<null>\n"+
				"12|gamma\tdelta|1e+20|\\x|[-1,0,1]|{3,2,1}|{{255,0},{0,255}}\n"+
				"20|from, csv|2.5|\\x41|[4,5,6]|{7,8,9}|{{9,8},{7,6}}\n")
		},
		"copy_out": func() error {
			// What copy_in loaded comes back as it went in.
			csvFile := filepath.Join(dir, "out.csv")
			out, err := psql(tg, fmt.Sprintf("COPY (SELECT * FROM %[1]s WHERE id BETWEEN 10 AND 12 ORDER BY id) TO STDOUT;\n"+
				"\\copy (SELECT * FROM %[1]s WHERE id BETWEEN 10 AND 12 ORDER BY id) to '%[2]s' with (format csv)\n", psqlCopy, csvFile))
			if err != nil {
				return err
			}
			if err := expectOutput("COPY TO STDOUT", out, copyInText); err != nil {
				return err
			}
			data, err := os.ReadFile(csvFile)
			if err != nil {
				return err
			}
			return expectOutput("\\copy to file (csv)", string(data), copyOutCSV)
		},
		"catalog": func() error {
			out, err := psql(tg, "\\dt\n")
			if err != nil {
				return err
			}
			if !strings.Contains(out, "|"+psqlItems+"|table|") {
				return fmt.Errorf("\\dt does not list %s: %q", psqlItems, out)
			}
			out, err = psql(tg, "\\d "+psqlItems+"\n")
			if err != nil {
				return err
			}
			for _, col := range []string{"id|integer", "name|text", "score|double precision", "payload|bytea", "embedding|vector(3)", "weights|", "pixels|"} {
				if !strings.Contains(out, col) {
					return fmt.Errorf("\\d %s lacks %q: %q", psqlItems, col, out)
				}
			}
			return nil
		},
		"sqlstate": func() error {
			out, err := psql(tg, "\\set ON_ERROR_STOP 0\nSELECT * FROM psql_missing;\n\\echo :LAST_ERROR_SQLSTATE\n"+
				"INSERT INTO "+psqlItems+" (id) VALUES (100), (100);\n\\echo :LAST_ERROR_SQLSTATE\nSELECT 3;\n")
			if err != nil {
				return err
			}
			return expectOutput("LAST_ERROR_SQLSTATE", out, "42P01\n23505\n3\n")
		},
		"cancel": func() error {
			// psql sends a CancelRequest on SIGINT while a query runs.
			cmd := exec.Command("psql", "-X", "-At", "-v", "VERBOSITY=verbose", "-d", tg.dsn(), "-c", "SELECT pg_sleep(30)")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				return err
			}
			start := time.Now()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			// A cancel that reaches the server before the query does is
			// lost, so SIGINT is repeated until psql ends.
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			timeout := time.After(10 * time.Second)
		wait:
			for {
				select {
				case <-done:
					break wait
				case <-tick.C:
					cmd.Process.Signal(syscall.SIGINT)
				case <-timeout:
					cmd.Process.Kill()
					<-done
					return fmt.Errorf("psql still running 10s after SIGINT: %s", stderr.String())
				}
			}
			if !strings.Contains(stderr.String(), "57014") {
				return fmt.Errorf("after SIGINT, %v: psql said %q, want SQLSTATE 57014", time.Since(start).Round(time.Millisecond), stderr.String())
			}
			return nil
		},
	})
}
