package wire

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// pgTrace is a client that records what a server answers, message by
// message, in a form two servers can be compared by.
type pgTrace struct {
	t  *testing.T
	fe *pgproto3.Frontend
	nc net.Conn
}

// dialTrace connects to addr and runs the startup as user; it returns the
// trace of the startup (every ParameterStatus, BackendKeyData, the first
// ReadyForQuery) apart from AuthenticationOk.
func dialTrace(t *testing.T, addr, user string, params ...string) (*pgTrace, []string) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
	c := &pgTrace{t: t, fe: pgproto3.NewFrontend(nc, nc), nc: nc}
	p := map[string]string{"user": user, "database": "postgres", "application_name": "compat"}
	for i := 0; i+1 < len(params); i += 2 {
		p[params[i]] = params[i+1]
	}
	c.fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: p})
	if err := c.fe.Flush(); err != nil {
		t.Fatal(err)
	}
	return c, c.readUntilReady()
}

// query sends q as one Query message (answering a COPY FROM STDIN with
// two rows) and returns the trace of the answer.
func (c *pgTrace) query(q string) []string {
	c.t.Helper()
	c.fe.Send(&pgproto3.Query{String: q})
	if err := c.fe.Flush(); err != nil {
		c.t.Fatal(err)
	}
	return c.readUntilReady()
}

func (c *pgTrace) readUntilReady() []string {
	c.t.Helper()
	var out []string
	for {
		m, err := c.fe.Receive()
		if err != nil {
			c.t.Fatalf("receive: %v (after %q)", err, out)
		}
		switch m := m.(type) {
		case *pgproto3.AuthenticationOk:
		case *pgproto3.ParameterStatus:
			out = append(out, "ParameterStatus "+m.Name+"="+m.Value)
		case *pgproto3.BackendKeyData:
			out = append(out, fmt.Sprintf("BackendKeyData %t", m.ProcessID != 0 && len(m.SecretKey) == 4))
		case *pgproto3.CommandComplete:
			out = append(out, "CommandComplete "+string(m.CommandTag))
		case *pgproto3.EmptyQueryResponse:
			out = append(out, "EmptyQueryResponse")
		case *pgproto3.ErrorResponse:
			out = append(out, "ErrorResponse "+m.Severity+" "+m.Code)
		case *pgproto3.NoticeResponse:
			out = append(out, "NoticeResponse "+m.Severity+" "+m.Code)
		case *pgproto3.RowDescription:
			var cols []string
			for _, f := range m.Fields {
				cols = append(cols, string(f.Name)+":"+strconv.Itoa(int(f.DataTypeOID)))
			}
			out = append(out, "RowDescription "+strings.Join(cols, ","))
		case *pgproto3.DataRow:
			var vals []string
			for _, v := range m.Values {
				vals = append(vals, string(v))
			}
			out = append(out, "DataRow "+strings.Join(vals, "|"))
		case *pgproto3.CopyInResponse:
			out = append(out, "CopyInResponse")
			c.fe.Send(&pgproto3.CopyData{Data: []byte("1\n2\n")})
			c.fe.Send(&pgproto3.CopyDone{})
			if err := c.fe.Flush(); err != nil {
				c.t.Fatal(err)
			}
		case *pgproto3.CopyOutResponse:
			out = append(out, "CopyOutResponse")
		case *pgproto3.CopyData:
			out = append(out, "CopyData "+string(m.Data))
		case *pgproto3.CopyDone:
			out = append(out, "CopyDone")
		case *pgproto3.ReadyForQuery:
			return append(out, "ReadyForQuery "+string(m.TxStatus))
		default:
			out = append(out, fmt.Sprintf("%T", m))
		}
	}
}

// TestStartupMatchesPostgres15 compares the startup of a session, its
// ParameterStatus messages in order, with PostgreSQL 15's. Two values
// differ by design: server_version (deeplaked reports 15.0) and TimeZone
// (PostgreSQL takes the machine's zone; deeplaked runs in UTC).
func TestStartupMatchesPostgres15(t *testing.T) {
	pg := startPostgres15(t)
	ts := startRealServer(t)
	_, want := dialTrace(t, pg.Conn().RemoteAddr().String(), "postgres")
	_, got := dialTrace(t, ts.addr, "postgres")
	for i, m := range want {
		switch {
		case strings.HasPrefix(m, "ParameterStatus server_version="):
			want[i] = "ParameterStatus server_version=" + ServerVersion
		case strings.HasPrefix(m, "ParameterStatus TimeZone="):
			want[i] = "ParameterStatus TimeZone=UTC"
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("startup:\n got %q\nwant %q", got, want)
	}
	for _, name := range []string{"server_version", "DateStyle", "integer_datetimes", "standard_conforming_strings",
		"client_encoding", "is_superuser", "session_authorization", "default_transaction_read_only", "in_hot_standby"} {
		if !slices.ContainsFunc(got, func(m string) bool { return strings.HasPrefix(m, "ParameterStatus "+name+"=") }) {
			t.Errorf("no ParameterStatus %s", name)
		}
	}
	if !slices.Contains(got, "BackendKeyData true") {
		t.Errorf("no BackendKeyData: %q", got)
	}
	if major, _, _ := strings.Cut(ServerVersion, "."); !(atoiOr0(major) >= 12) {
		t.Errorf("server_version %s: clients want 12 or newer", ServerVersion)
	}
}

// TestCommandTagsMatchPostgres15 runs the same query strings on deeplaked
// and on PostgreSQL 15 and compares every message of the answers: command
// tags, empty-query responses, errors' SQLSTATEs, ReadyForQuery states and
// ParameterStatus reports.
func TestCommandTagsMatchPostgres15(t *testing.T) {
	pg := startPostgres15(t)
	ts := startRealServer(t)
	// TimeZone is set in the startup packet, so that RESET ALL and DISCARD
	// ALL go back to the same zone on both.
	pgc, _ := dialTrace(t, pg.Conn().RemoteAddr().String(), "postgres", "TimeZone", "UTC")
	dlc, _ := dialTrace(t, ts.addr, "postgres", "TimeZone", "UTC")
	for _, q := range []string{
		"",
		"-- ping",
		";",
		" ; ; ",
		"CREATE TABLE tags (a int)",
		"INSERT INTO tags VALUES (1), (2)",
		"INSERT INTO tags VALUES (5) RETURNING a",
		"UPDATE tags SET a = a + 1",
		"UPDATE tags SET a = a WHERE a < 0",
		"DELETE FROM tags WHERE a = 3",
		"SELECT a FROM tags ORDER BY a",
		"SELECT 1; SELECT 2",
		"COPY tags FROM STDIN",
		"COPY tags TO STDOUT",
		"COPY (SELECT a FROM tags WHERE a > 100) TO STDOUT",
		"BEGIN",
		"INSERT INTO tags VALUES (7)",
		"COMMIT",
		"START TRANSACTION",
		"END",
		"BEGIN",
		"ABORT",
		"BEGIN",
		"SELECT nope FROM tags",
		"SELECT 1",
		"COMMIT",
		"BEGIN; INSERT INTO tags VALUES (8); ROLLBACK",
		"SELECT count(*) FROM tags",
		"INSERT INTO nope VALUES (1); SELECT 1",
		"SHOW search_path",
		"SHOW nope",
		"VACUUM tags",
		"DROP TABLE tags",
		// Notices and warnings.
		"COMMIT",
		"ROLLBACK",
		"SELECT 1; COMMIT",
		"BEGIN; BEGIN",
		"COMMIT",
		"SET LOCAL search_path = a",
		"SELECT 1; SET LOCAL search_path = a",
		"DROP TABLE IF EXISTS nope",
		"DROP TABLE IF EXISTS nope, nope2",
		"CREATE TABLE IF NOT EXISTS tags (a int)",
		"CREATE TABLE IF NOT EXISTS tags (a int)",
		"DROP TABLE tags",
		"SET client_min_messages = warning; DROP TABLE IF EXISTS nope; COMMIT",
		"SET client_min_messages = error; COMMIT",
		"RESET client_min_messages",
		// Settings: tags, errors and ParameterStatus reports.
		"SET search_path = public",
		"SET search_path TO a, \"B\", 'c,d'; SHOW search_path",
		"SET SESSION search_path TO DEFAULT; SHOW SEARCH_PATH",
		"RESET search_path",
		"SET application_name = 'x'",
		"SET application_name = 'y'; SET application_name = 'z'",
		"SHOW application_name",
		"RESET application_name",
		"SET application_name TO DEFAULT",
		"BEGIN; SET LOCAL application_name = 'local'; SHOW application_name",
		"COMMIT",
		"BEGIN",
		"SET application_name = 'rolled back'",
		"ROLLBACK",
		"SET application_name = 'w'; SELECT nope",
		"SHOW application_name",
		"SET DateStyle = 'German'",
		"SET DateStyle = 'ISO'; SHOW DateStyle",
		"SET DateStyle TO DEFAULT",
		"SET datestyle = 'nope'",
		"SET DateStyle = 'iso, sql'",
		"SET TIME ZONE 'America/New_York'; SHOW TIME ZONE",
		"SET TimeZone = 'Nope/Zone'",
		"SET TIME ZONE 'europe/paris'; SHOW TimeZone",
		"SET TIME ZONE 'GMT-05:00'; SHOW TimeZone",
		"SET TIME ZONE 'EST5EDT'; SHOW TimeZone",
		"SET TIME ZONE 'xyz123'; SHOW TimeZone",
		"SET TIME ZONE '<+0530>-0530'",
		"SET client_encoding = 'utf-8'",
		"SET NAMES 'UTF8'; SHOW client_encoding",
		"SET client_encoding = 'nope'",
		"SET extra_float_digits = 3; SHOW extra_float_digits",
		"SET extra_float_digits = 4",
		"SET extra_float_digits = 'x'",
		"SET statement_timeout = '5s'; SHOW statement_timeout",
		"SET statement_timeout = 100; SHOW statement_timeout",
		"SET statement_timeout = '1.5s'; SHOW statement_timeout",
		"SET statement_timeout = '3600000'; SHOW statement_timeout",
		"SET statement_timeout = -1",
		"SET statement_timeout = '10S'",
		"SET statement_timeout = 0; SHOW statement_timeout",
		"SET standard_conforming_strings = on",
		"SET standard_conforming_strings = maybe",
		"SET nope = 1",
		"SHOW nope",
		"SET myapp.k = 'v'; SHOW myapp.k",
		"SET server_version = '1'",
		"SET is_superuser = off",
		"SHOW is_superuser",
		"SHOW session_authorization",
		"SHOW integer_datetimes",
		"SHOW server_encoding",
		"SET TRANSACTION ISOLATION LEVEL SERIALIZABLE",
		"BEGIN; SET TRANSACTION ISOLATION LEVEL SERIALIZABLE; SHOW transaction_isolation",
		"COMMIT",
		"SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED; SHOW default_transaction_isolation",
		"SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE, NOT DEFERRABLE",
		"SHOW default_transaction_deferrable",
		"SET SESSION AUTHORIZATION DEFAULT",
		"RESET SESSION AUTHORIZATION",
		"SET application_name = 'before discard'",
		"DISCARD ALL",
		"SHOW application_name",
		"BEGIN; DISCARD ALL",
		"ROLLBACK",
		"SELECT 1; DISCARD ALL",
		"DISCARD PLANS",
		"DISCARD SEQUENCES",
		"DISCARD TEMP",
		"SELECT pg_sleep(0)",
		"SELECT pg_sleep(0.01), pg_sleep(NULL)",
		"SELECT pg_sleep(true)",
		"SELECT pg_sleep(1, 2)",
	} {
		want := pgc.query(q)
		got := dlc.query(q)
		if !slices.Equal(got, want) {
			t.Errorf("%q:\n got %q\nwant %q", q, got, want)
		}
	}
}

func atoiOr0(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
