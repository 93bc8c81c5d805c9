// Package pgerror is the project's error vocabulary: errors that carry a
// PostgreSQL SQLSTATE code from the point where they are made. Only wire/
// turns an Error into an ErrorResponse.
package pgerror

import (
	"errors"
	"fmt"
)

// Code is a five-character SQLSTATE.
type Code string

// SQLSTATE codes used by deeplaked (PostgreSQL Appendix A).
const (
	SuccessfulCompletion         Code = "00000"
	FeatureNotSupported          Code = "0A000"
	DataException                Code = "22000"
	StringDataRightTrunc         Code = "22001"
	NumericValueOutOfRange       Code = "22003"
	NullValueNotAllowed          Code = "22004"
	InvalidDatetimeFormat        Code = "22007"
	DatetimeFieldOverflow        Code = "22008"
	DivisionByZero               Code = "22012"
	InvalidParameterValue        Code = "22023"
	ArraySubscriptError          Code = "2202E"
	InvalidTextRepresentation    Code = "22P02"
	InvalidBinaryRepresentation  Code = "22P03"
	InvalidJSONText              Code = "22P02"
	BadCopyFileFormat            Code = "22P04"
	CharacterNotInRepertoire     Code = "22021"
	NotNullViolation             Code = "23502"
	UniqueViolation              Code = "23505"
	ActiveSQLTransaction         Code = "25001"
	NoActiveSQLTransaction       Code = "25P01"
	InFailedSQLTransaction       Code = "25P02"
	InvalidTransactionState      Code = "25000"
	InvalidAuthorization         Code = "28000"
	InvalidPassword              Code = "28P01"
	SerializationFailure         Code = "40001"
	TransactionResolutionUnknown Code = "08007"
	ReadOnlySQLTransaction       Code = "25006"
	SyntaxError                  Code = "42601"
	InsufficientPrivilege        Code = "42501"
	UndefinedColumn              Code = "42703"
	UndefinedTable               Code = "42P01"
	UndefinedObject              Code = "42704"
	UndefinedFunction            Code = "42883"
	DuplicateTable               Code = "42P07"
	DuplicateColumn              Code = "42701"
	DuplicateObject              Code = "42710"
	AmbiguousColumn              Code = "42702"
	DatatypeMismatch             Code = "42804"
	CannotCoerce                 Code = "42846"
	GroupingError                Code = "42803"
	InvalidColumnReference       Code = "42P10"
	InvalidTableDefinition       Code = "42P16"
	WrongObjectType              Code = "42809"
	IndeterminateDatatype        Code = "42P18"
	UndefinedParameter           Code = "42P02"
	DuplicatePreparedStatement   Code = "42P05"
	DuplicateCursor              Code = "42P03"
	InvalidSQLStatementName      Code = "26000"
	InvalidCursorName            Code = "34000"
	ObjectNotInPrerequisiteState Code = "55000"
	ProgramLimitExceeded         Code = "54000"
	OutOfMemory                  Code = "53200"
	StatementTooComplex          Code = "54001"
	InvalidCatalogName           Code = "3D000"
	DuplicateDatabase            Code = "42P04"
	ObjectInUse                  Code = "55006"
	DependentObjectsStillExist   Code = "2BP01"
	InvalidGrantOperation        Code = "0LP01"
	InvalidGrantor               Code = "0L000"
	TooManyConnections           Code = "53300"
	ConfigurationLimitExceeded   Code = "53400"
	QueryCanceled                Code = "57014"
	AdminShutdown                Code = "57P01"
	ProtocolViolation            Code = "08P01"
	ConnectionFailure            Code = "08006"
	InternalError                Code = "XX000"
	DataCorrupted                Code = "XX001"
	IOError                      Code = "58030"
)

// Error is an error with a SQLSTATE. Severity is ERROR unless set.
type Error struct {
	Code    Code
	Message string
	Detail  string
	Hint    string
	// Where is the context of the error (PostgreSQL's CONTEXT line, the
	// ErrorResponse 'W' field): "COPY t, line 3, column b: \"abc\"".
	Where    string
	Severity string
	cause    error
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the wrapped cause, if any.
func (e *Error) Unwrap() error { return e.cause }

// New returns an error with the given code and message.
func New(code Code, msg string) *Error { return &Error{Code: code, Message: msg} }

// Newf returns an error with the given code and a formatted message.
func Newf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrapf attaches a code and message to cause; errors.Is/As still see cause.
func Wrapf(cause error, code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...) + ": " + cause.Error(), cause: cause}
}

// WithDetail sets the detail field and returns e.
func (e *Error) WithDetail(format string, args ...any) *Error {
	e.Detail = fmt.Sprintf(format, args...)
	return e
}

// WithHint sets the hint field and returns e.
func (e *Error) WithHint(format string, args ...any) *Error {
	e.Hint = fmt.Sprintf(format, args...)
	return e
}

// WithWhere returns err with its context set to where, as an *Error:
// a copy of err's own *Error (so shared errors stay untouched), or err
// converted to XX000. errors.Is and errors.As still see err. A context
// already present stays first, as PostgreSQL lists the innermost first.
func WithWhere(err error, where string) *Error {
	c := *Convert(err)
	c.cause = err
	if c.Where != "" {
		where = c.Where + "\n" + where
	}
	c.Where = where
	return &c
}

// AssertionFailedf reports a bug: it becomes XX000 for the client and should
// be logged with its stack by the caller that sees it.
func AssertionFailedf(format string, args ...any) *Error {
	return &Error{Code: InternalError, Message: "internal error: " + fmt.Sprintf(format, args...)}
}

// Unimplementedf reports a feature deeplaked does not support yet (0A000).
func Unimplementedf(format string, args ...any) *Error {
	return &Error{Code: FeatureNotSupported, Message: fmt.Sprintf(format, args...)}
}

// GetCode returns the SQLSTATE of err: its own code if it (or anything it
// wraps) is an *Error, QueryCanceled for context cancellation, XX000 otherwise.
func GetCode(err error) Code {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	return InternalError
}

// Convert returns err as an *Error, wrapping foreign errors as XX000.
func Convert(err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	return &Error{Code: InternalError, Message: err.Error(), cause: err}
}
