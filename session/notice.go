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

// notice sends a notice of the given severity through w, if w takes them.
func notice(w ResultWriter, severity string, code pgerror.Code, format string, args ...any) error {
	nw, ok := w.(NoticeWriter)
	if !ok {
		return nil
	}
	n := pgerror.Newf(code, format, args...)
	n.Severity = severity
	return nw.Notice(n)
}
