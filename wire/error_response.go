package wire

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/deeplaked/deeplaked/pgerror"
)

// Severities of an ErrorResponse.
const (
	severityError = "ERROR"
	severityFatal = "FATAL"
)

// errorResponse turns err into the fields of an ErrorResponse. An error
// that carries no SQLSTATE is XX000, except a canceled context, which is
// 57014 as PostgreSQL reports a canceled statement.
func errorResponse(err error, severity string) *pgproto3.ErrorResponse {
	var pe *pgerror.Error
	if !errors.As(err, &pe) && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		pe = pgerror.New(pgerror.QueryCanceled, "canceling statement due to user request")
	} else {
		pe = pgerror.Convert(err)
	}
	if severity == severityError && pe.Severity != "" {
		severity = pe.Severity
	}
	return &pgproto3.ErrorResponse{
		Severity:            severity,
		SeverityUnlocalized: severity,
		Code:                string(pe.Code),
		Message:             noNUL(pe.Message),
		Detail:              noNUL(pe.Detail),
		Hint:                noNUL(pe.Hint),
		Where:               noNUL(pe.Where),
	}
}

// noNUL replaces NUL bytes, which would end an ErrorResponse field early
// and break the message, with U+FFFD. Client data quoted in a message
// (a bad COPY value, say) may hold them.
func noNUL(s string) string {
	if strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

// sendError sends err as an ERROR and flushes, so the client learns of it
// even if no ReadyForQuery follows soon.
func (c *conn) sendError(err error) {
	if c.recvErr != nil {
		return // reading the client failed: handle reports that instead
	}
	resp := errorResponse(err, severityError)
	if resp.Code == string(pgerror.InternalError) {
		c.logger.Warn("internal error", "err", err)
	}
	c.send(resp)
	_ = c.flush()
}

// fatal sends err as a FATAL error and flushes; the caller closes the
// connection.
func (c *conn) fatal(err error) {
	c.send(errorResponse(err, severityFatal))
	_ = c.flush()
}
