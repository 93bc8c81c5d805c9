package session

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/storage"
)

// statusRecorder is a recorder that also records ParameterStatus reports.
type statusRecorder struct{ recorder }

func (r *statusRecorder) ParameterStatus(name, value string) error {
	r.out = append(r.out, "status "+name+"="+value)
	return nil
}

func (r *statusRecorder) Notice(n *pgerror.Error) error {
	r.out = append(r.out, n.Severity+" "+string(n.Code)+" "+n.Message)
	return nil
}

// runReport executes q and returns its output, ParameterStatus and notices
// included.
func runReport(t *testing.T, s *Session, q string) string {
	t.Helper()
	r := &statusRecorder{}
	if err := s.ExecSimple(context.Background(), q, r); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return strings.Join(r.out, "; ")
}

func TestSetShowReset(t *testing.T) {
	s := newSession(t)
	for _, tc := range []struct{ q, want string }{
		// Values are checked and shown as PostgreSQL shows them.
		{"SET search_path = a, \"B\", public; SHOW search_path", `SET; columns search_path:text; a, "B", public; SHOW`},
		{"SET search_path TO 'a,b'; SHOW search_path", `SET; columns search_path:text; "a,b"; SHOW`},
		{"SET SESSION search_path = x; SHOW SEARCH_PATH", "SET; columns search_path:text; x; SHOW"},
		{"RESET search_path; SHOW search_path", `RESET; columns search_path:text; "$user", public; SHOW`},
		{"SET application_name TO 'x y'; SHOW application_name", "SET; columns application_name:text; x y; SHOW"},
		{"SET application_name TO DEFAULT; SHOW application_name", "SET; columns application_name:text; ; SHOW"},
		{"SET client_encoding = 'utf-8'; SHOW client_encoding", "SET; columns client_encoding:text; UTF8; SHOW"},
		{"SET NAMES 'unicode'; SHOW client_encoding", "SET; columns client_encoding:text; UTF8; SHOW"},
		{"SET client_encoding = sql_ascii; SHOW client_encoding", "SET; columns client_encoding:text; SQL_ASCII; SHOW"},
		{"SET client_encoding = DEFAULT; SHOW client_encoding", "SET; columns client_encoding:text; UTF8; SHOW"},
		{"SET DateStyle = 'German'; SHOW datestyle", "SET; columns DateStyle:text; German, DMY; SHOW"},
		{"SET datestyle = 'ISO'; SHOW DateStyle", "SET; columns DateStyle:text; ISO, DMY; SHOW"},
		{"SET datestyle = iso, mdy; SHOW DateStyle", "SET; columns DateStyle:text; ISO, MDY; SHOW"},
		{"SET TimeZone = 'America/New_York'; SHOW timezone", "SET; columns TimeZone:text; America/New_York; SHOW"},
		{"SET TIME ZONE 'utc'; SHOW TIME ZONE", "SET; columns TimeZone:text; UTC; SHOW"},
		{"SET TIME ZONE -5; SHOW TimeZone", "SET; columns TimeZone:text; <-05>+05; SHOW"},
		{"SET TIME ZONE LOCAL; SHOW TimeZone", "SET; columns TimeZone:text; UTC; SHOW"},
		{"SET TIME ZONE 'europe/paris'; SHOW TimeZone", "SET; columns TimeZone:text; Europe/Paris; SHOW"},
		{"SET TIME ZONE 'etc/utc'; SHOW TimeZone", "SET; columns TimeZone:text; Etc/UTC; SHOW"},
		{"SET TIME ZONE 'GMT-05:00'; SHOW TimeZone", "SET; columns TimeZone:text; GMT-05:00; SHOW"},
		{"SET TIME ZONE 'EST5EDT'; SHOW TimeZone", "SET; columns TimeZone:text; EST5EDT; SHOW"},
		{"SET TIME ZONE 'utc+3'; SHOW TimeZone", "SET; columns TimeZone:text; UTC+3; SHOW"},
		{"SET extra_float_digits = 3; SHOW extra_float_digits", "SET; columns extra_float_digits:text; 3; SHOW"},
		{"SET extra_float_digits = -15; SHOW extra_float_digits", "SET; columns extra_float_digits:text; -15; SHOW"},
		{"SET statement_timeout = '5s'; SHOW statement_timeout", "SET; columns statement_timeout:text; 5s; SHOW"},
		{"SET statement_timeout = 100; SHOW statement_timeout", "SET; columns statement_timeout:text; 100ms; SHOW"},
		{"SET statement_timeout = '1500ms'; SHOW statement_timeout", "SET; columns statement_timeout:text; 1500ms; SHOW"},
		{"SET statement_timeout = '1.5s'; SHOW statement_timeout", "SET; columns statement_timeout:text; 1500ms; SHOW"},
		{"SET statement_timeout = '3600000'; SHOW statement_timeout", "SET; columns statement_timeout:text; 1h; SHOW"},
		{"SET statement_timeout = '1min'; SHOW statement_timeout", "SET; columns statement_timeout:text; 1min; SHOW"},
		{"SET statement_timeout = '10 s'; SHOW statement_timeout", "SET; columns statement_timeout:text; 10s; SHOW"},
		{"SET statement_timeout = 0; SHOW statement_timeout", "SET; columns statement_timeout:text; 0; SHOW"},
		{"SET standard_conforming_strings = on; SHOW standard_conforming_strings", "SET; columns standard_conforming_strings:text; on; SHOW"},
		{"SET myapp.user_id = 42; SHOW myapp.user_id", "SET; columns myapp.user_id:text; 42; SHOW"},
		{"SHOW server_version; SHOW server_version_num", "columns server_version:text; 15.0; SHOW; columns server_version_num:text; 150000; SHOW"},
		{"SHOW is_superuser; SHOW session_authorization", "columns is_superuser:text; off; SHOW; columns session_authorization:text; u; SHOW"},
		{"SHOW transaction isolation level", "columns transaction_isolation:text; repeatable read; SHOW"},
		{"SHOW integer_datetimes", "columns integer_datetimes:text; on; SHOW"},
	} {
		mustRun(t, s, tc.q, tc.want)
	}
	mustRun(t, s, "RESET ALL", "RESET")
	for name, want := range map[string]string{"search_path": `"$user", public`, "DateStyle": "ISO, MDY", "TimeZone": "UTC",
		"extra_float_digits": "1", "statement_timeout": "0", "myapp.user_id": ""} {
		if got := s.Setting(name); got != want {
			t.Errorf("after RESET ALL %s = %q, want %q", name, got, want)
		}
	}
}

func TestSetErrors(t *testing.T) {
	s := newSession(t)
	for q, code := range map[string]pgerror.Code{
		"SET nope = 1":                                     pgerror.UndefinedObject,
		"SHOW nope":                                        pgerror.UndefinedObject,
		"RESET nope":                                       pgerror.UndefinedObject,
		"SHOW myapp.never_set":                             pgerror.UndefinedObject,
		"SET client_encoding = 'nope'":                     pgerror.InvalidParameterValue,
		"SET client_encoding = 'LATIN1'":                   pgerror.FeatureNotSupported,
		"SET DateStyle = 'nope'":                           pgerror.InvalidParameterValue,
		"SET DateStyle = 'iso, sql'":                       pgerror.InvalidParameterValue,
		"SET TimeZone = 'Nope/Zone'":                       pgerror.InvalidParameterValue,
		"SET TimeZone = '<+0530>-0530'":                    pgerror.InvalidParameterValue,
		"SET TimeZone = '../../etc/passwd'":                pgerror.InvalidParameterValue,
		"SET extra_float_digits = 4":                       pgerror.InvalidParameterValue,
		"SET extra_float_digits = 'x'":                     pgerror.InvalidParameterValue,
		"SET statement_timeout = 'x'":                      pgerror.InvalidParameterValue,
		"SET statement_timeout = -1":                       pgerror.InvalidParameterValue,
		"SET statement_timeout = '10S'":                    pgerror.InvalidParameterValue,
		"SET standard_conforming_strings = maybe":          pgerror.InvalidParameterValue,
		"SET standard_conforming_strings = off":            pgerror.FeatureNotSupported,
		"SET server_version = '1'":                         "55P02",
		"SET integer_datetimes = off":                      "55P02",
		"SET search_path = a; SET application_name = a, b": pgerror.SyntaxError,
		"SET TIME ZONE INTERVAL '+02:00' HOUR TO MINUTE":   pgerror.FeatureNotSupported,
		"SAVEPOINT a":                                      pgerror.FeatureNotSupported,
		"RELEASE SAVEPOINT a":                              pgerror.FeatureNotSupported,
		"ROLLBACK TO SAVEPOINT a":                          pgerror.FeatureNotSupported,
	} {
		wantCode(t, s, q, code)
	}
	_, err := run(t, s, "SET extra_float_digits = 4")
	if pe := pgerror.Convert(err); pe.Message != `4 is outside the valid range for parameter "extra_float_digits" (-15 .. 3)` {
		t.Errorf("message %q", pe.Message)
	}
	_, err = run(t, s, "SET nope = 1")
	if pe := pgerror.Convert(err); pe.Message != `unrecognized configuration parameter "nope"` {
		t.Errorf("message %q", pe.Message)
	}
	// A failed SET leaves the value as it was.
	if got := s.Setting("search_path"); got != `"$user", public` {
		t.Errorf("search_path after failed string = %q", got)
	}
}

// TestSetInTransactions checks PostgreSQL's rules: a SET is undone when its
// transaction rolls back, SET LOCAL lasts until the end of its transaction,
// and a query string is one implicit transaction.
func TestSetInTransactions(t *testing.T) {
	s := newSession(t)
	mustRun(t, s, "BEGIN; SET search_path = a; ROLLBACK", "BEGIN; SET; ROLLBACK")
	if got := s.Setting("search_path"); got != `"$user", public` {
		t.Errorf("after ROLLBACK: %q", got)
	}
	mustRun(t, s, "BEGIN; SET search_path = a; COMMIT", "BEGIN; SET; COMMIT")
	if got := s.Setting("search_path"); got != "a" {
		t.Errorf("after COMMIT: %q", got)
	}
	mustRun(t, s, "BEGIN", "BEGIN")
	mustRun(t, s, "SET LOCAL search_path = b; SHOW search_path", "SET; columns search_path:text; b; SHOW")
	mustRun(t, s, "COMMIT", "COMMIT")
	if got := s.Setting("search_path"); got != "a" {
		t.Errorf("SET LOCAL outlived its transaction: %q", got)
	}
	// SET LOCAL then SET: the SET is kept; SET then SET LOCAL: the SET is.
	mustRun(t, s, "BEGIN; SET LOCAL search_path = c; SET search_path = d; COMMIT", "BEGIN; SET; SET; COMMIT")
	if got := s.Setting("search_path"); got != "d" {
		t.Errorf("SET after SET LOCAL: %q", got)
	}
	mustRun(t, s, "BEGIN; SET search_path = e; SET LOCAL search_path = f; COMMIT", "BEGIN; SET; SET; COMMIT")
	if got := s.Setting("search_path"); got != "e" {
		t.Errorf("SET LOCAL after SET: %q", got)
	}
	// Outside a block SET LOCAL lasts for its query string only.
	mustRun(t, s, "SET LOCAL search_path = g; SHOW search_path", "SET; columns search_path:text; g; SHOW")
	if got := s.Setting("search_path"); got != "e" {
		t.Errorf("SET LOCAL outside a block: %q", got)
	}
	// A failed query string undoes its SETs; a failed block undoes them at
	// ROLLBACK (or COMMIT, which rolls back).
	if _, err := run(t, s, "SET search_path = h; SELECT 1/0"); err == nil {
		t.Fatal("1/0 succeeded")
	}
	if got := s.Setting("search_path"); got != "e" {
		t.Errorf("after a failed query string: %q", got)
	}
	mustRun(t, s, "BEGIN; SET search_path = i", "BEGIN; SET")
	wantCode(t, s, "SELECT 1/0", pgerror.DivisionByZero)
	mustRun(t, s, "COMMIT", "ROLLBACK")
	if got := s.Setting("search_path"); got != "e" {
		t.Errorf("after a failed block: %q", got)
	}
	// transaction_isolation describes one transaction.
	mustRun(t, s, "SET transaction_isolation = 'serializable'", "SET")
	if got := s.Setting("transaction_isolation"); got != "repeatable read" {
		t.Errorf("transaction_isolation outlived its transaction: %q", got)
	}
}

func TestParameterStatusReports(t *testing.T) {
	s := newSession(t)
	if err := s.Startup(map[string]string{"user": "u", "application_name": "app", "DateStyle": "ISO, DMY", "options": `-c search_path=x\ y --extra-float-digits=2`, "unknown_param": "ignored"}, true); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range s.ParameterStatuses() {
		got = append(got, st.Name+"="+st.Value)
	}
	want := "application_name=app client_encoding=UTF8 DateStyle=ISO, DMY default_transaction_read_only=off in_hot_standby=off " +
		"integer_datetimes=on IntervalStyle=postgres is_superuser=on server_encoding=UTF8 server_version=15.0 " +
		"session_authorization=u standard_conforming_strings=on TimeZone=UTC"
	if strings.Join(got, " ") != want {
		t.Errorf("startup statuses:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	if s.Setting("search_path") != `"x y"` || s.Setting("extra_float_digits") != "2" {
		t.Errorf("options: search_path %q, extra_float_digits %q", s.Setting("search_path"), s.Setting("extra_float_digits"))
	}

	for _, tc := range []struct{ q, want string }{
		// Reported once per query string, after the statements.
		{"SET application_name = 'a'; SET application_name = 'b'", "SET; SET; status application_name=b"},
		{"SET application_name = 'b'", "SET"},
		{"SET search_path = y", "SET"}, // not GUC_REPORT
		{"RESET application_name", "RESET; status application_name=app"},
		{"SET TIME ZONE 'Europe/Paris'; SET DateStyle = 'SQL'", "SET; SET; status DateStyle=SQL, DMY; status TimeZone=Europe/Paris"},
		{"RESET ALL", "RESET; status DateStyle=ISO, DMY; status TimeZone=UTC"},
		{"BEGIN; SET application_name = 'in'", "BEGIN; SET; status application_name=in"},
		{"ROLLBACK", "ROLLBACK; status application_name=app"},
		{"SET application_name = 'é'", "SET; status application_name=??"},
	} {
		if got := runReport(t, s, tc.q); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.q, got, tc.want)
		}
	}
	// RESET returns to the startup packet's value.
	mustRun(t, s, "RESET search_path; SHOW search_path", `RESET; columns search_path:text; "x y"; SHOW`)

	bad := newSession(t)
	if err := bad.Startup(map[string]string{"DateStyle": "nope"}, false); pgerror.GetCode(err) != pgerror.InvalidParameterValue {
		t.Errorf("bad startup DateStyle: %v", err)
	}
	if err := bad.Startup(map[string]string{"options": "-x"}, false); pgerror.GetCode(err) != pgerror.SyntaxError {
		t.Errorf("bad options: %v", err)
	}
}

func TestStatementTimeout(t *testing.T) {
	s := newSession(t)
	start := time.Now()
	_, err := run(t, s, "SET statement_timeout = '50ms'; SELECT pg_sleep(5)")
	pe := pgerror.Convert(err)
	if pe.Code != pgerror.QueryCanceled || pe.Message != "canceling statement due to statement timeout" {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("timeout took %s", d)
	}
	// The SET of the failed string was undone.
	if got := s.Setting("statement_timeout"); got != "0" {
		t.Errorf("statement_timeout = %q", got)
	}
	// Each statement has its own timeout.
	mustRun(t, s, "SET statement_timeout = '1s'", "SET")
	mustRun(t, s, "SELECT pg_sleep(0.6); SELECT pg_sleep(0.6)", "columns pg_sleep:void; ; SELECT 1; columns pg_sleep:void; ; SELECT 1")
	// A cancel from the client says so.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	err = s.ExecSimple(ctx, "SELECT pg_sleep(5)", &recorder{})
	if !errors.Is(err, context.Canceled) && pgerror.Convert(err).Message != "canceling statement due to user request" {
		t.Fatalf("canceled: %v", err)
	}
}

func TestPgSleep(t *testing.T) {
	s := newSession(t)
	mustRun(t, s, "SELECT pg_sleep(0), pg_sleep(NULL), pg_sleep('0.01'), pg_sleep(-1)", "columns pg_sleep:void,pg_sleep:void,pg_sleep:void,pg_sleep:void; |||; SELECT 1")
	wantCode(t, s, "SELECT pg_sleep('x')", pgerror.InvalidTextRepresentation)
	wantCode(t, s, "SELECT pg_sleep(true)", pgerror.UndefinedFunction)
	wantCode(t, s, "SELECT pg_sleep(1, 2)", pgerror.UndefinedFunction)
}

func TestShowAll(t *testing.T) {
	s := newSession(t)
	out, err := run(t, s, "SHOW ALL")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "columns name:text,setting:text,description:text; application_name||") ||
		!strings.Contains(out, "; statement_timeout|0|") || !strings.HasSuffix(out, "; SHOW") {
		t.Errorf("SHOW ALL: %s", out)
	}
}

func TestSplitOptions(t *testing.T) {
	for in, want := range map[string]string{
		"":                              "",
		"-c a=1":                        "a=1",
		"-ca=1 --b-c=2  -c  d=x\\ y":    "a=1 b_c=2 d=x y",
		`-c search_path=a,b -c x.y=\\z`: `search_path=a,b x.y=\z`,
	} {
		kvs, err := splitOptions(in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		var got []string
		for _, kv := range kvs {
			got = append(got, kv[0]+"="+kv[1])
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%q: got %q, want %q", in, strings.Join(got, " "), want)
		}
	}
}

func TestNotices(t *testing.T) {
	s := newSession(t)
	for _, tc := range []struct{ q, want string }{
		{"COMMIT", "WARNING 25P01 there is no transaction in progress; COMMIT"},
		{"SELECT 1; ROLLBACK", "columns ?column?:integer; 1; SELECT 1; WARNING 25P01 there is no transaction in progress; ROLLBACK"},
		{"BEGIN; BEGIN; COMMIT", "BEGIN; WARNING 25001 there is already a transaction in progress; BEGIN; COMMIT"},
		{"SET LOCAL search_path = a", "WARNING 25P01 SET LOCAL can only be used in transaction blocks; SET"},
		{"SELECT 1; SET LOCAL search_path = a", "columns ?column?:integer; 1; SELECT 1; SET"},
		{"DROP TABLE IF EXISTS nope, nope2", `NOTICE 00000 table "nope" does not exist, skipping; NOTICE 00000 table "nope2" does not exist, skipping; DROP TABLE`},
		{"CREATE TABLE t (a int); CREATE TABLE IF NOT EXISTS t (a int)", `CREATE TABLE; NOTICE 42P07 relation "t" already exists, skipping; CREATE TABLE`},
		// client_min_messages filters them.
		{"SET client_min_messages = warning; DROP TABLE IF EXISTS nope; COMMIT", "SET; DROP TABLE; WARNING 25P01 there is no transaction in progress; COMMIT"},
		{"SET client_min_messages = error; COMMIT", "SET; COMMIT"},
		{"SET client_min_messages = debug1; DROP TABLE IF EXISTS nope", `SET; NOTICE 00000 table "nope" does not exist, skipping; DROP TABLE`},
	} {
		if got := runReport(t, s, tc.q); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.q, got, tc.want)
		}
	}
}

func TestLookupSetting(t *testing.T) {
	s := newSession(t)
	if v, ok := s.LookupSetting("Application_Name"); !ok || v != "" {
		t.Errorf("application_name: %q, %v", v, ok)
	}
	if v, ok := s.LookupSetting("TimeZone"); !ok || v != "UTC" {
		t.Errorf("TimeZone: %q, %v", v, ok)
	}
	if _, ok := s.LookupSetting("nope"); ok {
		t.Error("nope is known")
	}
	names := SettingNames()
	if len(names) < 30 || names[0] != "application_name" {
		t.Errorf("SettingNames: %v", names)
	}
	for _, name := range names {
		if _, ok := s.LookupSetting(name); !ok {
			t.Errorf("%s has no value", name)
		}
	}
}

// TestDiscardAll checks what connection poolers rely on: DISCARD ALL
// resets every parameter and forgets prepared statements and portals.
func TestDiscardAll(t *testing.T) {
	s := newSession(t)
	if _, err := s.Prepare("p", "SELECT 1", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Bind("c", "p", nil, nil); err != nil {
		t.Fatal(err)
	}
	mustRun(t, s, "SET search_path = x; SET myapp.k = v", "SET; SET")
	mustRun(t, s, "DISCARD ALL", "DISCARD ALL")
	if _, err := s.Statement("p"); err == nil {
		t.Error("prepared statement survived DISCARD ALL")
	}
	if _, err := s.Portal("c"); err == nil {
		t.Error("portal survived DISCARD ALL")
	}
	if got := s.Setting("search_path"); got != `"$user", public` {
		t.Errorf("search_path = %q", got)
	}
	wantCode(t, s, "BEGIN; DISCARD ALL", pgerror.ActiveSQLTransaction)
	mustRun(t, s, "ROLLBACK", "ROLLBACK")
	mustRun(t, s, "DISCARD PLANS; DISCARD SEQUENCES; DISCARD TEMP", "DISCARD PLANS; DISCARD SEQUENCES; DISCARD TEMP")
	// SET TRANSACTION and SET SESSION CHARACTERISTICS.
	mustRun(t, s, "BEGIN; SET TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ WRITE; SHOW transaction_isolation; COMMIT",
		"BEGIN; SET; columns transaction_isolation:text; serializable; SHOW; COMMIT")
	mustRun(t, s, "SHOW transaction_isolation", "columns transaction_isolation:text; repeatable read; SHOW")
	mustRun(t, s, "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED; SHOW default_transaction_isolation",
		"SET; columns default_transaction_isolation:text; read committed; SHOW")
	wantCode(t, s, "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY", pgerror.FeatureNotSupported)
	mustRun(t, s, "SET SESSION AUTHORIZATION DEFAULT; RESET SESSION AUTHORIZATION; SET SESSION AUTHORIZATION u", "SET; RESET; SET")
	wantCode(t, s, "SET SESSION AUTHORIZATION other", pgerror.FeatureNotSupported)
}

// TestSuperuserSettings: with authentication on, only superusers set
// max_stack_depth (PostgreSQL's superuser context), and pg_settings says
// so.
func TestSuperuserSettings(t *testing.T) {
	eng := newEngine(t)
	eng.AuthEnabled = true
	for _, r := range []storage.Role{{Name: "root", Login: true, Superuser: true}, {Name: "bob", Login: true}} {
		if err := eng.db.CreateRoleWith(r, nil); err != nil {
			t.Fatal(err)
		}
	}
	root := connectTo(t, eng, "root", "postgres")
	bob := connectTo(t, eng, "bob", "postgres")
	wantError(t, bob, "SET max_stack_depth = '1MB'", pgerror.InsufficientPrivilege, `permission denied to set parameter "max_stack_depth"`)
	mustRun(t, root, "SET max_stack_depth = '1MB'", "SET")
	mustRun(t, root, "SELECT setting, context FROM pg_settings WHERE name = 'max_stack_depth'",
		"columns setting:text,context:text; 1MB|superuser; SELECT 1")
	mustRun(t, bob, "SET work_mem = '8MB'", "SET")
}

// TestSetConfig: set_config sets a parameter as SET does (SET LOCAL with
// is_local, RESET for a NULL value) and returns its new value; the
// parameter's own checks apply.
func TestSetConfig(t *testing.T) {
	eng := newEngine(t)
	s := connect(t, eng, "u")
	mustRun(t, s, "SELECT pg_catalog.set_config('search_path', '', false)", "columns set_config:text; ; SELECT 1")
	mustRun(t, s, "SHOW search_path", "columns search_path:text; ; SHOW")
	mustRun(t, s, "SELECT set_config('work_mem', '8MB', false), current_setting('work_mem')", "columns set_config:text,current_setting:text; 8MB|8MB; SELECT 1")
	mustRun(t, s, "SELECT set_config('work_mem', NULL, false)", "columns set_config:text; 4MB; SELECT 1")
	mustRun(t, s, "BEGIN", "BEGIN")
	mustRun(t, s, "SELECT set_config('myapp.tenant', '42', true)", "columns set_config:text; 42; SELECT 1")
	mustRun(t, s, "SELECT current_setting('myapp.tenant')", "columns current_setting:text; 42; SELECT 1")
	mustRun(t, s, "COMMIT", "COMMIT")
	mustRun(t, s, "SELECT current_setting('myapp.tenant')", "columns current_setting:text; ; SELECT 1")
	wantError(t, s, "SELECT set_config('work_mem', 'lots', false)", pgerror.InvalidParameterValue, `invalid value for parameter "work_mem": "lots"`)
	wantError(t, s, "SELECT set_config('server_version', '1', false)", pgerror.Code("55P02"), `parameter "server_version" cannot be changed`)
}
