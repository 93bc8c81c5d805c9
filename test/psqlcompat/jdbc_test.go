package psqlcompat

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// jdbcJar is Debian's libpostgresql-jdbc-java.
const jdbcJar = "/usr/share/java/postgresql.jar"

// TestJDBCMetadataMatchesPostgres15 asks pgJDBC's DatabaseMetaData
// (getSchemas, getTables, getColumns, getPrimaryKeys, getIndexInfo) about
// the same tables in deeplaked and in PostgreSQL 15 and compares the rows.
func TestJDBCMetadataMatchesPostgres15(t *testing.T) {
	javac, err := exec.LookPath("javac")
	if err != nil {
		t.Fatal("javac is not installed; ./scripts/test.sh installs a JDK")
	}
	java, err := exec.LookPath("java")
	if err != nil {
		t.Fatal("java is not installed; ./scripts/test.sh installs a JDK")
	}
	if _, err := os.Stat(jdbcJar); err != nil {
		t.Fatalf("%s is not installed; ./scripts/test.sh installs it (libpostgresql-jdbc-java)", jdbcJar)
	}
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Fatal("psql is not installed; ./scripts/test.sh installs it (postgresql-client-15)")
	}
	classes := t.TempDir()
	if out, err := exec.Command(javac, "-d", classes, "-cp", jdbcJar, filepath.Join("jdbc", "CatalogDump.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	pgPort := startPostgres15(t)
	dlHost, dlPort := startDeeplaked(t)
	for _, port := range []string{pgPort, dlPort} {
		host := "127.0.0.1"
		if port == dlPort {
			host = dlHost
		}
		for _, q := range setup {
			cmd := exec.Command(psql, "-X", "-q", "-h", host, "-p", port, "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-c", q)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("setup %q on %s: %v\n%s", q, port, err, out)
			}
		}
	}
	dump := func(host, port string) string {
		t.Helper()
		url := "jdbc:postgresql://" + host + ":" + port + "/postgres?user=postgres"
		cmd := exec.Command(java, "-cp", classes+string(os.PathListSeparator)+jdbcJar, "CatalogDump", url, "items,events,pairs,counters")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("CatalogDump against port %s: %v\n%s", port, err, out)
		}
		return string(out)
	}
	want := dump("127.0.0.1", pgPort)
	got := dump(dlHost, dlPort)
	if !strings.Contains(want, "primary keys | TABLE_NAME=pairs") {
		t.Fatalf("PostgreSQL's answer lacks the primary keys:\n%s", want)
	}
	if got != want {
		gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
		for i := 0; i < max(len(gl), len(wl)); i++ {
			g, w := "", ""
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Errorf("line %d:\n deeplaked:      %s\n PostgreSQL 15:  %s", i+1, g, w)
			}
		}
	}
}
