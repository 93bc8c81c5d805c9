package storage

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deeplaked/deeplaked/types"
)

const crashEnv = "DEEPLAKED_STORAGE_CRASH_DIR"

// TestMain runs the crash child when the parent re-executes the test
// binary with crashEnv set.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashEnv); dir != "" {
		crashChild(dir)
		os.Exit(0)
	}
	if dir := os.Getenv(dbCrashEnv); dir != "" {
		dbCrashChild(dir)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func crashTable() *TableDesc {
	return &TableDesc{Name: "acked", Columns: []ColumnDesc{
		{Name: "id", Type: types.TypInt8, Serial: true}, {Name: "payload", Type: types.TypText},
	}, PrimaryKey: []int{0}}
}

// crashChild commits rows forever, printing each id once its commit has
// returned, until it is killed.
func crashChild(dir string) {
	db, err := Open(Options{Dir: dir, FlushRows: 40})
	if err != nil {
		fmt.Println("error", err)
		return
	}
	tbl := crashTable()
	if _, err := db.CreateTable(tbl, false); err != nil {
		fmt.Println("error", err)
		return
	}
	out := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		// The id comes from the serial sequence: values 1, 2, ... map to rows 0, 1, ...
		v, err := db.NextVal(tbl.ID, 0)
		if err != nil || v != int64(i)+1 {
			fmt.Fprintln(out, "error nextval", v, err)
			out.Flush()
			return
		}
		b := types.NewBatch(tbl.ColumnTypes(), 1)
		b.Cols[0].AppendInt(v - 1)
		b.Cols[1].AppendString(strings.Repeat("p", i%50))
		txn := db.Begin()
		err = txn.Insert(tbl, b)
		if err == nil {
			err = txn.Commit()
		}
		if err != nil {
			fmt.Fprintln(out, "error", err)
			out.Flush()
			return
		}
		fmt.Fprintln(out, "ack", i)
		out.Flush()
	}
}

// TestCrash kills a writing process with SIGKILL and checks that every row
// whose commit it acknowledged is there after reopening.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := -1
	sc := bufio.NewScanner(stdout)
	deadline := time.Now().Add(20 * time.Second)
	for sc.Scan() {
		line := sc.Text()
		id, ok := strings.CutPrefix(line, "ack ")
		if !ok {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child: %s", line)
		}
		n, err := strconv.Atoi(id)
		if err != nil || n != acked+1 {
			t.Fatalf("child acked %q after %d", id, acked)
		}
		acked = n
		if acked == 300 || time.Now().After(deadline) {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	// Acks already written before the kill are acknowledged too.
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "ack "); ok {
			if n, err := strconv.Atoi(id); err == nil && n == acked+1 {
				acked = n
			}
		}
	}
	cmd.Wait()
	if acked < 100 {
		t.Fatalf("child acknowledged only %d rows", acked+1)
	}

	db, err := Open(Options{Dir: dir, FlushRows: 40})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl, err := db.Table("acked")
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := scanAll(t, db, nil, tbl, []int{0, 1})
	if len(rows) < acked+1 {
		t.Fatalf("%d rows survived, %d were acknowledged", len(rows), acked+1)
	}
	for i, r := range rows {
		if r[0] != int64(i) || r[1] != strings.Repeat("p", i%50) {
			t.Fatalf("row %d = %v", i, r)
		}
	}
	if v, err := db.NextVal(tbl.ID, 0); err != nil || v <= int64(len(rows)) {
		t.Fatalf("nextval after crash = %d, %v; %d values were handed out", v, err, len(rows))
	}
	keys, _ := db.Store().List(context.Background(), "")
	t.Logf("%d rows acknowledged, %d present, %d chunk objects", acked+1, len(rows), len(keys))
	// The database keeps working: keys are enforced, new rows go in.
	b := types.NewBatch(tbl.ColumnTypes(), 1)
	b.Cols[0].AppendInt(0)
	b.Cols[1].AppendString("")
	txn := db.Begin()
	defer txn.Rollback()
	if err := txn.Insert(tbl, b); err == nil {
		t.Fatal("duplicate key accepted after crash")
	}
}
