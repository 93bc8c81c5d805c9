package session

import "github.com/deeplaked/deeplaked/pgerror"

// NoticeWriter is implemented by a ResultWriter that can send the client a
// notice or a warning (the protocol's NoticeResponse), as PostgreSQL sends
// them for DROP TABLE IF EXISTS of a missing table or COMMIT outside a
// transaction block. A writer without it drops them.
type NoticeWriter interface {
	// Notice sends n; n.Severity is NOTICE or WARNING.
	Notice(n *pgerror.Error) error
}

// Notice severities.
const (
	severityNotice  = "NOTICE"
	severityWarning = "WARNING"
)

// noticeLevels orders client_min_messages' values: a notice is sent when
// its severity is at least the session's client_min_messages.
var noticeLevels = map[string]int{
	"debug5": 1, "debug4": 2, "debug3": 3, "debug2": 4, "debug1": 5, "log": 6,
	"notice": 7, severityNotice: 7, "warning": 8, severityWarning: 8, "error": 9,
}

// notice sends a notice of the given severity through w, if w takes them
// and client_min_messages lets it through.
func (s *Session) notice(w ResultWriter, severity string, code pgerror.Code, format string, args ...any) error {
	nw, ok := w.(NoticeWriter)
	if !ok || noticeLevels[severity] < noticeLevels[s.settings.cur["client_min_messages"]] {
		return nil
	}
	n := pgerror.Newf(code, format, args...)
	n.Severity = severity
	return nw.Notice(n)
}
