package session

import (
	"context"
	"errors"
	"io/fs"
	"math"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/sql"
	"github.com/deeplaked/deeplaked/types"
)

// ParameterStatusWriter is implemented by a ResultWriter that can report a
// changed setting to the client (the protocol's ParameterStatus). The
// session reports the settings PostgreSQL marks GUC_REPORT whenever their
// value changes, at the end of each query string.
type ParameterStatusWriter interface {
	ParameterStatus(name, value string) error
}

// StatementContextSetter is implemented by a ResultWriter that waits for
// the client during a statement (COPY FROM STDIN): the session hands it
// the statement's context, which statement_timeout ends.
type StatementContextSetter interface {
	SetStatementContext(ctx context.Context)
}

// Setting is one run-time parameter and its value.
type Setting struct{ Name, Value string }

// param describes one run-time parameter (a GUC, in PostgreSQL's words).
type param struct {
	// name is the parameter as PostgreSQL spells it (DateStyle).
	name string
	// def is the value a session starts with; boot-time constants have no
	// other value.
	def string
	// report marks GUC_REPORT parameters: the client is told of every
	// change with ParameterStatus.
	report bool
	// fixed parameters cannot be set (55P02).
	fixed bool
	// list parameters take several values, each quoted as an identifier
	// where it needs to be (search_path).
	list bool
	// txn parameters describe the transaction in progress: every SET of
	// them is LOCAL.
	txn bool
	// superuser parameters may be set by superusers only (PostgreSQL's
	// PGC_SUSET), as a value past them could cost the server.
	superuser bool
	// check validates a value and returns it as SHOW displays it; cur is
	// the current value (DateStyle keeps the half that is not set). nil
	// accepts any single value as it is.
	check func(p *param, v, cur string) (string, error)
	desc  string
}

// params lists the parameters a session knows, sorted case-insensitively by
// name as SHOW ALL and the startup report list them. Parameters that
// deeplaked accepts without acting on them (it has no date or interval
// types, prints floats in their shortest exact form, and runs every
// transaction as REPEATABLE READ) are documented in docs/sql.md.
var params = []*param{
	{name: "application_name", report: true, check: checkAppName, desc: "Sets the application name to be reported in statistics and logs."},
	{name: "authentication_timeout", def: "10s", fixed: true, check: checkMillis, desc: "Sets the maximum allowed time to complete client authentication."},
	{name: "bytea_output", def: "hex", check: checkEnum("hex"), desc: "Sets the output format for bytea."},
	{name: "client_encoding", def: "UTF8", report: true, check: checkEncoding, desc: "Sets the client's character set encoding."},
	{name: "client_min_messages", def: "notice", check: checkEnum("debug5", "debug4", "debug3", "debug2", "debug1", "log", "notice", "warning", "error"), desc: "Sets the message levels that are sent to the client."},
	{name: "DateStyle", def: "ISO, MDY", report: true, check: checkDateStyle, desc: "Sets the display format for date and time values."},
	{name: "deeplake.branch", def: "main", check: checkBranch, desc: "Sets the branch of each table that statements read and write."},
	{name: "default_transaction_deferrable", def: "off", check: checkBoolValue, desc: "Sets the default deferrable status of new transactions."},
	{name: "default_transaction_isolation", def: "repeatable read", check: checkIsolation, desc: "Sets the transaction isolation level of each new transaction."},
	{name: "default_transaction_read_only", def: "off", report: true, check: checkOff, desc: "Sets the default read-only status of new transactions."},
	{name: "extra_float_digits", def: "1", check: checkInt(-15, 3), desc: "Sets the number of digits displayed for floating-point values."},
	{name: "hnsw.ef_search", def: "40", check: checkInt(1, 1000), desc: "Sets the size of the dynamic candidate list for search."},
	{name: "hnsw.iterative_scan", def: "off", check: checkEnum("off", "relaxed_order", "strict_order"), desc: "Sets the mode for iterative scans."},
	{name: "hnsw.max_scan_tuples", def: "20000", check: checkInt(1, 2147483647), desc: "Sets the max number of tuples to visit for iterative scans."},
	{name: "idle_in_transaction_session_timeout", def: "0", check: checkMillis, desc: "Sets the maximum allowed idle time between queries, when in a transaction."},
	{name: "idle_session_timeout", def: "0", check: checkMillis, desc: "Sets the maximum allowed idle time between queries, when not in a transaction."},
	{name: "ivfflat.iterative_scan", def: "off", check: checkEnum("off", "relaxed_order"), desc: "Sets the mode for iterative scans."},
	{name: "ivfflat.max_probes", def: "32768", check: checkInt(1, 32768), desc: "Sets the max number of probes for iterative scans."},
	{name: "ivfflat.probes", def: "1", check: checkInt(1, 32768), desc: "Sets the number of probes."},
	{name: "in_hot_standby", def: "off", report: true, fixed: true, desc: "Shows whether hot standby is currently active."},
	{name: "integer_datetimes", def: "on", report: true, fixed: true, desc: "Shows whether datetimes are integer based."},
	{name: "IntervalStyle", def: "postgres", report: true, check: checkEnum("postgres", "postgres_verbose", "sql_standard", "iso_8601"), desc: "Sets the display format for interval values."},
	{name: "is_superuser", def: "off", report: true, fixed: true, desc: "Shows whether the current user is a superuser."},
	{name: "lc_collate", def: "C", fixed: true, desc: "Shows the collation order locale."},
	{name: "lc_ctype", def: "C", fixed: true, desc: "Shows the character classification and case conversion locale."},
	{name: "lc_messages", def: "C", desc: "Sets the language in which messages are displayed."},
	{name: "lc_monetary", def: "C", desc: "Sets the locale for formatting monetary amounts."},
	{name: "lc_numeric", def: "C", desc: "Sets the locale for formatting numbers."},
	{name: "lc_time", def: "C", desc: "Sets the locale for formatting date and time values."},
	{name: "lock_timeout", def: "0", check: checkMillis, desc: "Sets the maximum allowed duration of any wait for a lock."},
	{name: "maintenance_work_mem", def: "64MB", check: checkMemory(1024, 2147483647), desc: "Sets the maximum memory to be used for maintenance operations."},
	{name: "max_connections", def: "100", fixed: true, check: checkInt(0, 262143), desc: "Sets the maximum number of concurrent connections."},
	{name: "max_identifier_length", def: "63", fixed: true, desc: "Shows the maximum identifier length."},
	{name: "max_parallel_maintenance_workers", def: "2", check: checkInt(0, 1024), desc: "Sets the maximum number of parallel processes per maintenance operation."},
	{name: "max_parallel_workers_per_gather", def: strconv.Itoa(runtime.GOMAXPROCS(0)), check: checkInt(0, 1024), desc: "Sets the maximum number of parallel processes per executor node."},
	{name: "max_stack_depth", def: stackDepthSetting(sql.DefaultStackDepthKB()), check: checkStackDepth, superuser: true, desc: "Sets the maximum stack depth, in kilobytes."},
	{name: "memory_limit", def: "-1", fixed: true, desc: "Shows the server's memory limit (--memory-limit)."},
	{name: "role", def: "none", desc: "Sets the current session's role."},
	{name: "search_path", def: `"$user", public`, list: true, desc: "Sets the schema search order for names that are not schema-qualified."},
	{name: "server_encoding", def: "UTF8", report: true, fixed: true, desc: "Shows the server (database) character set encoding."},
	{name: "server_version", def: ServerVersion, report: true, fixed: true, desc: "Shows the server version."},
	{name: "server_version_num", def: ServerVersionNum, fixed: true, desc: "Shows the server version as an integer."},
	{name: "session_authorization", report: true, fixed: true, desc: "Sets the session user name."},
	{name: "standard_conforming_strings", def: "on", report: true, check: checkOn, desc: "Causes '...' strings to treat backslashes literally."},
	{name: "statement_timeout", def: "0", check: checkMillis, desc: "Sets the maximum allowed duration of any statement."},
	{name: "superuser_reserved_connections", def: "3", fixed: true, check: checkInt(0, 262143), desc: "Sets the number of connection slots reserved for superusers."},
	{name: "TimeZone", def: "UTC", report: true, check: checkTimeZone, desc: "Sets the time zone for displaying and interpreting time stamps."},
	{name: "transaction_deferrable", def: "off", txn: true, check: checkBoolValue, desc: "Whether to defer a read-only serializable transaction until it can be executed with no possible serialization failures."},
	{name: "transaction_isolation", def: "repeatable read", txn: true, check: checkIsolation, desc: "Sets the current transaction's isolation level."},
	{name: "transaction_read_only", def: "off", txn: true, check: checkOff, desc: "Sets the current transaction's read-only status."},
	{name: "work_mem", def: "4MB", check: checkMemory(64, 2147483647), desc: "Sets the maximum memory to be used for query workspaces."},
}

// ServerVersion and ServerVersionNum are the PostgreSQL version deeplaked
// reports.
const (
	ServerVersion    = "15.0"
	ServerVersionNum = "150000"
)

// paramByName finds a parameter by its name in any case.
var paramByName = func() map[string]*param {
	m := make(map[string]*param, len(params))
	for _, p := range params {
		m[strings.ToLower(p.name)] = p
	}
	return m
}()

// settings is a session's parameter state, with what a transaction in
// progress must be able to undo.
type settings struct {
	// cur holds every value by lower-case name; custom parameters (with a
	// dot in the name) are kept as set.
	cur map[string]string
	// reset holds the values RESET returns to: the defaults, overridden
	// by the startup packet.
	reset map[string]string
	// undo holds, for each parameter set in the transaction in progress,
	// the value before the transaction (prior, restored by a rollback)
	// and the one a commit keeps (kept: the last SET that was not LOCAL).
	undo map[string]undoEntry
	// reported holds the values of GUC_REPORT parameters the client last
	// heard of.
	reported map[string]string
}

type undoEntry struct{ prior, kept string }

func newSettings(user string, server map[string]string) settings {
	s := settings{cur: make(map[string]string, len(params)), reset: make(map[string]string, len(params)), reported: make(map[string]string)}
	for _, p := range params {
		s.reset[strings.ToLower(p.name)] = p.def
	}
	for k, v := range server {
		s.reset[k] = v
	}
	s.reset["session_authorization"] = user
	for k, v := range s.reset {
		s.cur[k] = v
	}
	for _, p := range params {
		if p.report {
			s.reported[strings.ToLower(p.name)] = s.cur[strings.ToLower(p.name)]
		}
	}
	return s
}

// setFixed sets a fixed parameter's value (one the server decides).
func (s *settings) setFixed(name, v string) {
	s.reset[name], s.cur[name] = v, v
}

// SetServerSetting sets a fixed, server-wide parameter (max_connections,
// superuser_reserved_connections, authentication_timeout) to the value the
// server runs with, for sessions to show; a time is in milliseconds. Call
// it before the first session.
func (e *Engine) SetServerSetting(name, value string) error {
	p := paramByName[strings.ToLower(name)]
	if p == nil || !p.fixed {
		return unknownParam(name)
	}
	if p.check != nil {
		v, err := p.check(p, value, p.def)
		if err != nil {
			return err
		}
		value = v
	}
	if e.serverSettings == nil {
		e.serverSettings = make(map[string]string)
	}
	e.serverSettings[strings.ToLower(p.name)] = value
	return nil
}

// Setting returns a session setting's value by name, in any case; "" for
// one that is not set.
func (s *Session) Setting(name string) string { return s.settings.cur[strings.ToLower(name)] }

// LookupSetting returns a run-time parameter's value by name, in any case;
// ok is false for a parameter the session does not know, as
// current_setting and pg_settings need.
func (s *Session) LookupSetting(name string) (value string, ok bool) {
	value, ok = s.settings.cur[strings.ToLower(name)]
	return value, ok
}

// SettingNames returns the names of the parameters sessions know, as
// PostgreSQL spells them, in SHOW ALL's order.
func SettingNames() []string {
	names := make([]string, len(params))
	for i, p := range params {
		names[i] = p.name
	}
	return names
}

// Startup applies the parameters of the client's startup packet: each
// known run-time parameter (application_name, client_encoding, DateStyle,
// TimeZone, search_path, ..., and those of "options" given as -c name=value
// or --name=value) becomes the session's value and the one RESET returns
// to. An invalid value is an error that ends the connection, as in
// PostgreSQL; unknown names are ignored, since clients send PostgreSQL
// parameters deeplaked does not model. superuser is reported as
// is_superuser.
func (s *Session) Startup(startup map[string]string, superuser bool) error {
	st := &s.settings
	st.reset["is_superuser"] = onOff(superuser)
	st.cur["is_superuser"] = st.reset["is_superuser"]
	apply := func(name, value string) error {
		p := paramByName[strings.ToLower(name)]
		if p == nil || p.fixed {
			return nil
		}
		key := strings.ToLower(p.name)
		v, err := p.value([]sql.SetArg{{Text: value}}, st.cur[key])
		if err != nil {
			return err
		}
		st.cur[key], st.reset[key] = v, v
		return nil
	}
	names := make([]string, 0, len(startup))
	for name := range startup {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		switch name {
		case "user", "database", "replication":
		case "options":
			opts, err := splitOptions(startup[name])
			if err != nil {
				return err
			}
			for _, kv := range opts {
				if err := apply(kv[0], kv[1]); err != nil {
					return err
				}
			}
		default:
			if err := apply(name, startup[name]); err != nil {
				return err
			}
		}
	}
	for name := range st.reported {
		st.reported[name] = st.cur[name]
	}
	return nil
}

// ParameterStatuses returns the GUC_REPORT parameters and their values,
// sorted as PostgreSQL sends them after authentication.
func (s *Session) ParameterStatuses() []Setting {
	var out []Setting
	for _, p := range params {
		if p.report {
			out = append(out, Setting{Name: p.name, Value: s.settings.cur[strings.ToLower(p.name)]})
		}
	}
	return out
}

// splitOptions parses the "options" startup parameter as PostgreSQL does:
// words split at spaces (a backslash escapes the next character), each -c
// name=value, -cname=value or --name=value.
func splitOptions(opts string) ([][2]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(opts); i++ {
		c := opts[i]
		switch {
		case c == '\\' && i+1 < len(opts):
			i++
			cur.WriteByte(opts[i])
			inWord = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	var out [][2]string
	for i := 0; i < len(words); i++ {
		w := words[i]
		var kv string
		switch {
		case w == "-c" && i+1 < len(words):
			i++
			kv = words[i]
		case strings.HasPrefix(w, "-c"):
			kv = w[2:]
		case strings.HasPrefix(w, "--"):
			kv = w[2:]
		default:
			return nil, pgerror.Newf(pgerror.SyntaxError, "invalid command-line argument for server process: %s", w)
		}
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, pgerror.Newf(pgerror.SyntaxError, "-c %s requires a value", kv)
		}
		out = append(out, [2]string{strings.ReplaceAll(name, "-", "_"), value})
	}
	return out, nil
}

// execSet runs SET, SET LOCAL, SET ... TO DEFAULT, RESET and RESET ALL.
// As in PostgreSQL, a SET is undone if its transaction rolls back, and a
// SET LOCAL lasts until its transaction ends.
func (s *Session) execSet(st *sql.SetVar, w ResultWriter) error {
	if (st.Local || st.Name == "transaction") && !s.explicit && !s.multi {
		what := "SET LOCAL"
		if st.Name == "transaction" {
			what = "SET TRANSACTION"
		}
		if err := s.notice(w, severityWarning, pgerror.NoActiveSQLTransaction, "%s can only be used in transaction blocks", what); err != nil {
			return err
		}
	}
	switch {
	case st.Multi != nil: // SET TRANSACTION, SET SESSION CHARACTERISTICS
		for _, m := range st.Multi {
			if err := s.setOne(m); err != nil {
				return err
			}
		}
	case st.Name == "": // RESET ALL
		s.resetAll()
	default:
		if err := s.setOne(st); err != nil {
			return err
		}
	}
	return w.WriteComplete(st.Tag)
}

// resetAll is RESET ALL: every parameter back to the session's default.
func (s *Session) resetAll() {
	for _, p := range params {
		if !p.fixed {
			key := strings.ToLower(p.name)
			s.setValue(key, s.settings.reset[key], false)
		}
	}
	for key := range s.settings.cur {
		if paramByName[key] == nil {
			s.setValue(key, "", false)
		}
	}
	// The role is the session user's again, and so is is_superuser.
	s.setValue("is_superuser", s.settings.reset["is_superuser"], false)
}

// setConfig is set_config(name, value, is_local): SET name = value, SET
// LOCAL with local, RESET for a nil value; it returns the parameter's
// value then.
func (s *Session) setConfig(name string, value *string, local bool) (string, error) {
	st := &sql.SetVar{Name: strings.ToLower(name), Local: local, Reset: value == nil}
	if value != nil {
		st.Args = []sql.SetArg{{Text: *value}}
	}
	if p := paramByName[st.Name]; p != nil && p.list && value != nil && !p.fixed {
		// The value is the list's text as it is (search_path = '' is
		// empty, not one empty name), as PostgreSQL takes it.
		s.setValue(st.Name, *value, local || p.txn)
		return *value, nil
	}
	if err := s.setOne(st); err != nil {
		return "", err
	}
	v, _ := s.lookupSetting(st.Name)
	if p := paramByName[st.Name]; p == nil {
		v = s.settings.cur[st.Name]
	}
	return v, nil
}

// setOne sets one parameter for SET, SET LOCAL or RESET.
func (s *Session) setOne(st *sql.SetVar) error {
	p := paramByName[st.Name]
	if p == nil {
		if !strings.Contains(st.Name, ".") {
			return unknownParam(st.Name)
		}
		// A custom parameter ("myapp.user_id"): any value, as text.
		v := ""
		if !st.Reset {
			v = joinArgs(st.Args, false)
		}
		s.setValue(st.Name, v, st.Local)
		return nil
	}
	key := strings.ToLower(p.name)
	if p.fixed {
		if p.name == "session_authorization" {
			// Only the session's own user: SET SESSION AUTHORIZATION
			// DEFAULT and RESET SESSION AUTHORIZATION, as poolers send.
			if st.Reset || len(st.Args) == 1 && st.Args[0].Text == s.User {
				return nil
			}
			return pgerror.Unimplementedf("SET SESSION AUTHORIZATION to another role is not supported")
		}
		return pgerror.Newf(pgerror.Code("55P02"), "parameter \"%s\" cannot be changed", p.name)
	}
	if p.superuser {
		if super, _ := s.rights(); !super {
			return pgerror.Newf(pgerror.InsufficientPrivilege, "permission denied to set parameter \"%s\"", p.name)
		}
	}
	v := s.settings.reset[key]
	if !st.Reset {
		var err error
		if v, err = p.value(st.Args, s.settings.cur[key]); err != nil {
			return err
		}
	}
	s.setValue(key, v, st.Local || p.txn)
	return nil
}

// execDiscard runs DISCARD. DISCARD ALL, which connection poolers send
// when a client leaves, resets every parameter and closes every prepared
// statement and portal; it cannot run in a transaction block. The other
// targets have nothing to discard: deeplaked caches no plans and has no
// temporary tables or sequence caches.
func (s *Session) execDiscard(st *sql.Discard, w ResultWriter) error {
	if st.Target == "ALL" {
		if s.explicit || s.multi {
			return pgerror.New(pgerror.ActiveSQLTransaction, "DISCARD ALL cannot run inside a transaction block")
		}
		for name := range s.portals {
			s.ClosePortal(name)
		}
		clear(s.stmts)
		s.resetAll()
	}
	return w.WriteComplete("DISCARD " + st.Target)
}

// value checks the arguments of SET p and returns the value to store.
func (p *param) value(args []sql.SetArg, cur string) (string, error) {
	if len(args) > 1 && !p.list && p.name != "DateStyle" {
		return "", pgerror.Newf(pgerror.SyntaxError, "SET %s takes only one argument", p.name)
	}
	v := joinArgs(args, p.list)
	if p.check == nil {
		return v, nil
	}
	return p.check(p, v, cur)
}

// joinArgs joins SET's values with ", ", as PostgreSQL displays a list;
// for a list parameter each name is quoted as an identifier where needed.
func joinArgs(args []sql.SetArg, quote bool) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		if quote && !a.Number {
			b.WriteString(quoteIdent(a.Text))
		} else {
			b.WriteString(a.Text)
		}
	}
	return b.String()
}

// quoteIdent quotes name as PostgreSQL's quote_identifier does: only when
// it is not a lower-case identifier.
func quoteIdent(name string) string {
	ok := name != ""
	for i := 0; i < len(name) && ok; i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c == '_' || i > 0 && (c >= '0' && c <= '9' || c == '$')
	}
	if ok {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// setValue sets a parameter in the transaction in progress, remembering
// how to undo it.
func (s *Session) setValue(key, v string, local bool) {
	st := &s.settings
	if st.undo == nil {
		st.undo = make(map[string]undoEntry)
	}
	e, ok := st.undo[key]
	if !ok {
		e.prior = st.cur[key]
		e.kept = e.prior
	}
	if !local {
		e.kept = v
	}
	st.undo[key] = e
	st.cur[key] = v
}

// endSettings ends the settings' part of a transaction: a commit keeps
// each SET but the LOCAL ones, a rollback undoes them all. A custom
// parameter, once set, stays defined (empty), as in PostgreSQL.
func (s *Session) endSettings(commit bool) {
	st := &s.settings
	for key, e := range st.undo {
		if commit {
			st.cur[key] = e.kept
		} else {
			st.cur[key] = e.prior
		}
	}
	st.undo = nil
}

// ReportSettings sends ParameterStatus to w for each GUC_REPORT parameter
// whose value changed since the client last heard of it. ExecSimple calls
// it at the end of each query string; the extended protocol's Sync does.
func (s *Session) ReportSettings(w ResultWriter) error { return s.reportSettings(w) }

// reportSettings sends ParameterStatus for each GUC_REPORT parameter whose
// value changed since the client last heard of it.
func (s *Session) reportSettings(w ResultWriter) error {
	pw, ok := w.(ParameterStatusWriter)
	if !ok {
		return nil
	}
	st := &s.settings
	for _, p := range params {
		if !p.report {
			continue
		}
		key := strings.ToLower(p.name)
		if v := st.cur[key]; v != st.reported[key] {
			if err := pw.ParameterStatus(p.name, v); err != nil {
				return err
			}
			st.reported[key] = v
		}
	}
	return nil
}

// showColumns returns the result columns of SHOW name or SHOW ALL, as
// Describe reports them: one text column named as PostgreSQL spells the
// parameter, or name, setting and description.
func (s *Session) showColumns(st *sql.ShowVar) ([]Column, error) {
	if st.Name == "all" {
		return []Column{{Name: "name", Type: types.TypText}, {Name: "setting", Type: types.TypText}, {Name: "description", Type: types.TypText}}, nil
	}
	if p := paramByName[st.Name]; p != nil {
		return []Column{{Name: p.name, Type: types.TypText}}, nil
	}
	if _, ok := s.settings.cur[st.Name]; !ok {
		return nil, unknownParam(st.Name)
	}
	return []Column{{Name: st.Name, Type: types.TypText}}, nil
}

// execShow runs SHOW name and SHOW ALL.
func (s *Session) execShow(st *sql.ShowVar, w ResultWriter) error {
	cols, err := s.showColumns(st)
	if err != nil {
		return err
	}
	if err := w.WriteColumns(cols); err != nil {
		return err
	}
	if st.Name == "all" {
		b := types.NewBatch([]types.Type{types.TypText, types.TypText, types.TypText}, len(params))
		for _, p := range params {
			b.Cols[0].AppendString(p.name)
			b.Cols[1].AppendString(s.settings.cur[strings.ToLower(p.name)])
			b.Cols[2].AppendString(p.desc)
		}
		b.SetLen(len(params))
		if err := w.WriteBatch(b); err != nil {
			return err
		}
		return w.WriteComplete("SHOW")
	}
	b := types.NewBatch([]types.Type{types.TypText}, 1)
	b.Cols[0].AppendString(s.settings.cur[st.Name])
	b.SetLen(1)
	if err := w.WriteBatch(b); err != nil {
		return err
	}
	return w.WriteComplete("SHOW")
}

func unknownParam(name string) error {
	return pgerror.Newf(pgerror.UndefinedObject, "unrecognized configuration parameter \"%s\"", name)
}

func invalidValue(p *param, v string) *pgerror.Error {
	return pgerror.Newf(pgerror.InvalidParameterValue, "invalid value for parameter \"%s\": \"%s\"", p.name, v)
}

// checkStackDepth validates max_stack_depth: as in PostgreSQL, at least
// 100kB and at most the stack the parser runs on allows
// (sql.MaxStackDepthKB).
func checkStackDepth(p *param, v, cur string) (string, error) {
	t, err := checkMemory(sql.MinStackDepthKB, 2147483647)(p, v, cur)
	if err != nil {
		return "", err
	}
	kb, _ := types.MemorySettingKB(t)
	if hi := sql.MaxStackDepthKB(); kb > hi {
		return "", pgerror.Newf(pgerror.InvalidParameterValue, "\"max_stack_depth\" must not exceed %dkB.", hi).
			WithHint("Increase the platform's stack depth limit via \"ulimit -s\" or local equivalent.")
	}
	return t, nil
}

func stackDepthSetting(kb int64) string {
	if kb%1024 == 0 {
		return strconv.FormatInt(kb/1024, 10) + "MB"
	}
	return strconv.FormatInt(kb, 10) + "kB"
}

// parse parses a query string under the session's max_stack_depth. The
// limits are checked before the COPY ... TO GPU rewrite too, which
// tokenizes the text.
func (s *Session) parse(query string) ([]sql.Parsed, error) {
	kb, ok := types.MemorySettingKB(s.settings.cur["max_stack_depth"])
	if !ok {
		kb = sql.DefaultStackDepthKB()
	}
	lim := sql.Limits{MaxStackDepth: kb * 1024}
	if err := lim.Check(query); err != nil {
		return nil, err
	}
	return sql.ParseLimited(rewriteCopyToGPU(query), lim)
}

// errStatementTimeout is the cause of a statement's cancellation by
// statement_timeout.
var errStatementTimeout = pgerror.New(pgerror.QueryCanceled, "canceling statement due to statement timeout")

// statementContext returns the context one statement runs under: ctx,
// with statement_timeout applied when it is set.
func (s *Session) statementContext(ctx context.Context) (context.Context, context.CancelFunc) {
	s.stmtTime = time.Now()
	ms, _ := parseMillis(s.settings.cur["statement_timeout"])
	if ms <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, time.Duration(ms)*time.Millisecond, errStatementTimeout)
}

// statementError returns the error a statement that failed with err under
// sctx reports: a cancellation caused by statement_timeout says so.
func statementError(sctx context.Context, err error) error {
	if err == nil || sctx.Err() == nil || !errors.Is(context.Cause(sctx), errStatementTimeout) {
		return err
	}
	if pgerror.GetCode(err) == pgerror.QueryCanceled || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return errStatementTimeout
	}
	return err
}

// Checks of parameter values.

func checkAppName(_ *param, v, _ string) (string, error) {
	// As PostgreSQL does, anything but printable ASCII becomes '?'.
	b := []byte(v)
	for i, c := range b {
		if c < 32 || c > 126 {
			b[i] = '?'
		}
	}
	return string(b), nil
}

func checkEnum(values ...string) func(*param, string, string) (string, error) {
	return func(p *param, v, _ string) (string, error) {
		lv := strings.ToLower(v)
		if slices.Contains(values, lv) {
			if p.name == "bytea_output" && lv != "hex" {
				return "", pgerror.Unimplementedf("bytea_output = %s is not supported", lv)
			}
			return lv, nil
		}
		return "", invalidValue(p, v)
	}
}

func checkIsolation(p *param, v, _ string) (string, error) {
	lv := strings.ToLower(v)
	switch lv {
	case "serializable", "repeatable read", "read committed", "read uncommitted":
		return lv, nil
	}
	return "", invalidValue(p, v)
}

// parseBool reads a boolean as PostgreSQL's parse_bool does.
func parseBool(v string) (bool, bool) {
	lv := strings.ToLower(strings.TrimSpace(v))
	switch {
	case lv == "":
		return false, false
	case lv == "on", lv == "of": // "of" is ambiguous
		return lv == "on", lv == "on"
	case strings.HasPrefix("true", lv), strings.HasPrefix("yes", lv), lv == "1":
		return true, true
	case strings.HasPrefix("false", lv), strings.HasPrefix("no", lv), lv == "0", strings.HasPrefix("off", lv) && len(lv) >= 2:
		return false, true
	}
	return false, false
}

func checkBool(p *param, v string) (bool, error) {
	b, ok := parseBool(v)
	if !ok {
		return false, pgerror.Newf(pgerror.InvalidParameterValue, "parameter \"%s\" requires a Boolean value", p.name)
	}
	return b, nil
}

// checkBoolValue accepts a boolean, shown as on or off.
func checkBoolValue(p *param, v, _ string) (string, error) {
	b, err := checkBool(p, v)
	if err != nil {
		return "", err
	}
	return onOff(b), nil
}

// checkOn accepts only on: deeplaked parses strings the standard way only.
func checkOn(p *param, v, _ string) (string, error) {
	b, err := checkBool(p, v)
	if err != nil {
		return "", err
	}
	if !b {
		return "", pgerror.Unimplementedf("%s = off is not supported", p.name)
	}
	return "on", nil
}

// checkOff accepts only off: read-only transactions are not supported.
func checkOff(p *param, v, _ string) (string, error) {
	b, err := checkBool(p, v)
	if err != nil {
		return "", err
	}
	if b {
		return "", pgerror.Unimplementedf("%s = on is not supported", p.name)
	}
	return "off", nil
}

// checkMemory accepts a memory size as PostgreSQL's memory parameters
// do: kB by default, or with a unit kB, MB, GB or TB; within lo..hi kB.
// The value is kept as written: deeplaked sizes its memory itself.
func checkMemory(lo, hi int64) func(*param, string, string) (string, error) {
	return func(p *param, v, _ string) (string, error) {
		t := strings.TrimSpace(v)
		kb, ok := types.MemorySettingKB(t)
		if !ok {
			return "", invalidValue(p, v).WithHint(`Valid units for this parameter are "B", "kB", "MB", "GB", and "TB".`)
		}
		if kb < lo || kb > hi {
			return "", pgerror.Newf(pgerror.InvalidParameterValue, "%d kB is outside the valid range for parameter \"%s\" (%d kB .. %d kB)", kb, p.name, lo, hi)
		}
		return t, nil
	}
}

func checkInt(lo, hi int64) func(*param, string, string) (string, error) {
	return func(p *param, v, _ string) (string, error) {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return "", invalidValue(p, v)
		}
		n := int64(math.RoundToEven(f))
		if n < lo || n > hi {
			return "", pgerror.Newf(pgerror.InvalidParameterValue, "%d is outside the valid range for parameter \"%s\" (%d .. %d)", n, p.name, lo, hi)
		}
		return strconv.FormatInt(n, 10), nil
	}
}

// timeUnits are PostgreSQL's units for time parameters, in milliseconds.
var timeUnits = []struct {
	name string
	ms   float64
}{{"us", 0.001}, {"ms", 1}, {"s", 1000}, {"min", 60 * 1000}, {"h", 60 * 60 * 1000}, {"d", 24 * 60 * 60 * 1000}}

// parseMillis reads a time parameter in milliseconds: a number with an
// optional unit (us, ms, s, min, h, d; case-sensitive, as in PostgreSQL),
// milliseconds without one, rounded to a whole millisecond.
func parseMillis(v string) (int64, bool) {
	s := strings.TrimSpace(v)
	end := 0
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || s[end] == '.' || s[end] == '-' || s[end] == '+' || s[end] == 'e' || s[end] == 'E') {
		end++
	}
	// A unit may start with no space after an exponent-less number: "1min".
	// Back off an 'e' that is no exponent.
	for end > 0 && (s[end-1] == 'e' || s[end-1] == 'E') {
		end--
	}
	num, unit := s[:end], strings.TrimSpace(s[end:])
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	mult := 1.0
	if unit != "" {
		i := slices.IndexFunc(timeUnits, func(u struct {
			name string
			ms   float64
		}) bool {
			return u.name == unit
		})
		if i < 0 {
			return 0, false
		}
		mult = timeUnits[i].ms
	}
	ms := math.RoundToEven(f * mult)
	if ms > math.MaxInt64/2 || ms < math.MinInt64/2 {
		return 0, false
	}
	return int64(ms), true
}

// checkMillis checks a time parameter (0 to INT_MAX milliseconds) and
// shows it in the largest unit that divides it, as PostgreSQL does.
func checkMillis(p *param, v, _ string) (string, error) {
	ms, ok := parseMillis(v)
	if !ok {
		return "", invalidValue(p, v)
	}
	if ms < 0 || ms > math.MaxInt32 {
		return "", pgerror.Newf(pgerror.InvalidParameterValue, "%d ms is outside the valid range for parameter \"%s\" (0 .. %d)", ms, p.name, math.MaxInt32)
	}
	return formatMillis(ms), nil
}

func formatMillis(ms int64) string {
	if ms == 0 {
		return "0"
	}
	for i := len(timeUnits) - 1; i >= 1; i-- {
		u := int64(timeUnits[i].ms)
		if ms%u == 0 {
			return strconv.FormatInt(ms/u, 10) + timeUnits[i].name
		}
	}
	return strconv.FormatInt(ms, 10) + "ms"
}

// encodings are PostgreSQL's client encoding names (upper case, without
// punctuation, as its lookup compares them) and aliases.
var encodings = map[string]string{
	"UTF8": "UTF8", "UNICODE": "UTF8",
	"SQLASCII": "SQL_ASCII", "LATIN1": "LATIN1", "LATIN2": "LATIN2", "LATIN3": "LATIN3", "LATIN4": "LATIN4",
	"LATIN5": "LATIN5", "LATIN6": "LATIN6", "LATIN7": "LATIN7", "LATIN8": "LATIN8", "LATIN9": "LATIN9", "LATIN10": "LATIN10",
	"ISO88591": "LATIN1", "ISO885915": "LATIN9", "WIN1250": "WIN1250", "WIN1251": "WIN1251", "WIN1252": "WIN1252",
	"WIN1253": "WIN1253", "WIN1254": "WIN1254", "WIN1255": "WIN1255", "WIN1256": "WIN1256", "WIN1257": "WIN1257",
	"WIN1258": "WIN1258", "WIN866": "WIN866", "WIN874": "WIN874", "KOI8R": "KOI8R", "KOI8U": "KOI8U",
	"EUCJP": "EUC_JP", "EUCCN": "EUC_CN", "EUCKR": "EUC_KR", "EUCTW": "EUC_TW", "EUCJIS2004": "EUC_JIS_2004",
	"SJIS": "SJIS", "SHIFTJIS2004": "SHIFT_JIS_2004", "BIG5": "BIG5", "GBK": "GBK", "GB18030": "GB18030",
	"UHC": "UHC", "JOHAB": "JOHAB", "MULEINTERNAL": "MULE_INTERNAL", "ISO88595": "ISO_8859_5",
	"ISO88596": "ISO_8859_6", "ISO88597": "ISO_8859_7", "ISO88598": "ISO_8859_8",
}

// checkEncoding accepts UTF8 under any of its spellings, and SQL_ASCII,
// which asks for no conversion (libpq sends it for client_encoding=auto
// under the C locale, as psql on a terminal does). deeplaked does not
// convert between encodings, so another known encoding is 0A000, the
// error PostgreSQL gives for a conversion it lacks; an unknown name is
// 22023.
func checkEncoding(p *param, v, _ string) (string, error) {
	key := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' {
			return r - 'a' + 'A'
		}
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, v)
	enc, ok := encodings[key]
	switch {
	case !ok:
		return "", invalidValue(p, v)
	case enc != "UTF8" && enc != "SQL_ASCII":
		return "", pgerror.Unimplementedf("conversion between %s and UTF8 is not supported", enc)
	}
	return enc, nil
}

// checkDateStyle parses DateStyle as PostgreSQL does: an output style
// (ISO, SQL, Postgres, German) and a field order (MDY, DMY, YMD), either
// of which may be left out to keep the current one.
func checkDateStyle(p *param, v, cur string) (string, error) {
	style, order, _ := strings.Cut(cur, ", ")
	haveStyle, haveOrder, conflict := false, false, false
	setStyle := func(x string) {
		conflict = conflict || haveStyle && style != x
		style, haveStyle = x, true
	}
	setOrder := func(x string) {
		conflict = conflict || haveOrder && order != x
		order, haveOrder = x, true
	}
	for _, tok := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		switch strings.ToUpper(tok) {
		case "ISO":
			setStyle("ISO")
		case "SQL":
			setStyle("SQL")
		case "POSTGRES":
			setStyle("Postgres")
		case "GERMAN":
			setStyle("German")
			if !haveOrder {
				order = "DMY"
			}
		case "YMD":
			setOrder("YMD")
		case "DMY", "EURO", "EUROPEAN":
			setOrder("DMY")
		case "MDY", "US", "NONEURO", "NONEUROPEAN":
			setOrder("MDY")
		case "DEFAULT":
			setStyle("ISO")
			setOrder("MDY")
		default:
			return "", invalidValue(p, v).WithDetail("Unrecognized key word: \"%s\".", tok)
		}
	}
	if conflict {
		return "", invalidValue(p, v).WithDetail("Conflicting \"datestyle\" specifications.")
	}
	return style + ", " + order, nil
}

// checkTimeZone accepts what PostgreSQL accepts for TimeZone: UTC under
// its usual names, the zones of the IANA database in any case (shown in
// their own spelling), numeric offsets in hours (shown as PostgreSQL shows
// them, <+03>-03) and POSIX zone specifications (EST5EDT, GMT-05:00, as
// JDBC sends for a JVM zone without a name).
func checkTimeZone(p *param, v, _ string) (string, error) {
	s := strings.TrimSpace(v)
	switch strings.ToUpper(s) {
	case "UTC", "GMT", "Z", "ZULU", "UCT", "UNIVERSAL":
		return strings.ToUpper(s), nil
	case "", "LOCAL":
		return "", invalidValue(p, v)
	}
	if h, err := strconv.ParseFloat(s, 64); err == nil {
		if math.Abs(h) > 15*24 || math.IsNaN(h) {
			return "", invalidValue(p, v)
		}
		return offsetZone(int64(math.Round(h * 3600))), nil
	}
	if strings.Contains(s, "..") || strings.HasPrefix(s, "/") {
		return "", invalidValue(p, v)
	}
	if name, ok := zoneNames()[strings.ToLower(s)]; ok {
		return name, nil
	}
	if _, err := time.LoadLocation(s); err == nil {
		return s, nil
	}
	if m := posixZone.FindStringSubmatch(s); m != nil {
		if h, _ := strconv.Atoi(m[1]); h <= 168 {
			if strings.Contains(s, "<") {
				return s, nil
			}
			return strings.ToUpper(s), nil
		}
	}
	return "", invalidValue(p, v)
}

// posixZone matches a POSIX time zone specification: a name (three
// letters or more, or <quoted>), an offset in hours[:minutes[:seconds]],
// then optionally a daylight-saving name, offset and rule.
var posixZone = regexp.MustCompile(`^(?:[A-Za-z]{3,}|<[+-]?[A-Za-z0-9]+>)[+-]?(\d{1,3})(?::\d{1,2}){0,2}(?:(?:[A-Za-z]{3,}|<[+-]?[A-Za-z0-9]+>)(?:[+-]?\d{1,3}(?::\d{1,2}){0,2})?(?:,[A-Za-z0-9.,/:+-]*)?)?$`)

// zoneDir is where the IANA zone files are installed.
const zoneDir = "/usr/share/zoneinfo"

// zoneNames maps the lower-case names of the IANA zones installed in
// zoneDir to their own spelling, read once; empty when there are none.
var zoneNames = sync.OnceValue(func() map[string]string {
	names := make(map[string]string)
	_ = filepath.WalkDir(zoneDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == zoneDir {
			return nil
		}
		if d.IsDir() && !unicode.IsUpper(rune(d.Name()[0])) {
			return fs.SkipDir // posix/ and right/ repeat the zones
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(zoneDir, path)
		if err != nil || !unicode.IsUpper(rune(rel[0])) {
			return nil // posixrules, zone.tab and the like
		}
		names[strings.ToLower(rel)] = rel
		return nil
	})
	return names
})

// offsetZone names a fixed offset east of UTC in POSIX form, as
// PostgreSQL shows SET TIME ZONE 3: <+03>-03.
func offsetZone(secs int64) string {
	sign, inv := "+", "-"
	if secs < 0 {
		sign, inv, secs = "-", "+", -secs
	}
	h, m, sec := secs/3600, secs/60%60, secs%60
	abbr := sign + pad2(h)
	posix := inv + pad2(h)
	if m != 0 || sec != 0 {
		abbr += pad2(m)
		posix += ":" + pad2(m)
		if sec != 0 {
			abbr += pad2(sec)
			posix += ":" + pad2(sec)
		}
	}
	if secs == 0 {
		return "<+00>-00"
	}
	return "<" + abbr + ">" + posix
}

func pad2(n int64) string {
	if n < 10 {
		return "0" + strconv.FormatInt(n, 10)
	}
	return strconv.FormatInt(n, 10)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// parallelWorkers is how many workers a Gather may use
// (max_parallel_workers_per_gather; below 2, none).
func (s *Session) parallelWorkers() int {
	n, _ := strconv.Atoi(s.settings.cur["max_parallel_workers_per_gather"])
	return n
}
