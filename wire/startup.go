package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	"github.com/deeplaked/deeplaked/pgerror"
	"github.com/deeplaked/deeplaked/session"
)

// Startup packet codes. A startup packet is a 4-byte length (itself
// included) followed by a 4-byte code: a protocol version (major<<16|minor)
// or one of the request codes below.
const (
	codeCancelRequest uint32 = 80877102
	codeSSLRequest    uint32 = 80877103
	codeGSSENCRequest uint32 = 80877104

	// protocolMajor and protocolMinor are the newest version deeplaked speaks.
	protocolMajor = 3
	protocolMinor = 0

	// maxStartupPacketLen is PostgreSQL's MAX_STARTUP_PACKET_LENGTH.
	maxStartupPacketLen = 10000
)

// startupPacket is one decoded packet of the startup phase.
type startupPacket struct {
	// code is the protocol version or request code.
	code uint32
	// body is everything after the code.
	body []byte
}

// major and minor split a protocol version code.
func (p startupPacket) major() uint32 { return p.code >> 16 }
func (p startupPacket) minor() uint32 { return p.code & 0xffff }

// readStartupPacket reads one startup-phase packet from r. It reads exactly
// the bytes of the packet, so r needs no buffering and the next packet can be
// read from the same reader after the server answers.
func readStartupPacket(r io.Reader, buf []byte) (startupPacket, error) {
	var hdr [8]byte
	if _, err := io.ReadFull(r, hdr[:4]); err != nil {
		return startupPacket{}, err
	}
	n := int64(binary.BigEndian.Uint32(hdr[:4]))
	if n < 8 || n > maxStartupPacketLen {
		return startupPacket{}, pgerror.Newf(pgerror.ProtocolViolation, "invalid length of startup packet: %d", n)
	}
	if _, err := io.ReadFull(r, hdr[4:8]); err != nil {
		return startupPacket{}, unexpectedEOF(err)
	}
	p := startupPacket{code: binary.BigEndian.Uint32(hdr[4:8])}
	rest := int(n - 8)
	if cap(buf) < rest {
		buf = make([]byte, rest)
	}
	p.body = buf[:rest]
	if _, err := io.ReadFull(r, p.body); err != nil {
		return startupPacket{}, unexpectedEOF(err)
	}
	return p, nil
}

// unexpectedEOF turns a clean EOF in the middle of a packet into
// io.ErrUnexpectedEOF.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// parseStartupParams decodes the body of a StartupMessage: name/value pairs
// of NUL-terminated strings ended by an empty name. Protocol options
// ("_pq_." names) are returned apart, since the server answers them in
// NegotiateProtocolVersion rather than treating them as settings.
func parseStartupParams(body []byte) (params map[string]string, pqOptions []string, err error) {
	params = make(map[string]string)
	for {
		i := bytes.IndexByte(body, 0)
		if i < 0 {
			return nil, nil, pgerror.New(pgerror.ProtocolViolation, "invalid startup packet layout: expected terminator as last byte")
		}
		if i == 0 {
			if len(body) != 1 {
				return nil, nil, pgerror.New(pgerror.ProtocolViolation, "invalid startup packet layout: expected terminator as last byte")
			}
			return params, pqOptions, nil
		}
		name := string(body[:i])
		body = body[i+1:]
		j := bytes.IndexByte(body, 0)
		if j < 0 {
			return nil, nil, pgerror.Newf(pgerror.ProtocolViolation, "invalid startup packet layout: missing value for parameter %q", name)
		}
		value := string(body[:j])
		body = body[j+1:]
		if strings.HasPrefix(name, "_pq_.") {
			pqOptions = append(pqOptions, name)
			continue
		}
		params[name] = value
	}
}

// startupInfoOf checks the parameters of a StartupMessage and fills in the
// defaults PostgreSQL applies: the database defaults to the user name.
func startupInfoOf(params map[string]string) (StartupInfo, error) {
	info := StartupInfo{
		User:            params["user"],
		Database:        params["database"],
		ApplicationName: params["application_name"],
		Params:          params,
	}
	if info.User == "" {
		return StartupInfo{}, pgerror.New(pgerror.InvalidAuthorization, "no PostgreSQL user name specified in startup packet")
	}
	if info.Database == "" {
		info.Database = info.User
	}
	return info, nil
}

// unsupportedProtocol is the error for a startup packet whose code is
// neither a known request nor protocol 3.x.
func unsupportedProtocol(p startupPacket) error {
	return pgerror.Newf(pgerror.ProtocolViolation,
		"unsupported frontend protocol %d.%d: server supports %d.0 to %d.%d",
		p.major(), p.minor(), protocolMajor, protocolMajor, protocolMinor)
}

// settingsSession is a Session that keeps run-time parameters: it takes
// the startup packet's (application_name, DateStyle, options, ...) and
// says what to report. session.Session is one.
type settingsSession interface {
	// Startup applies the startup parameters; an error ends the
	// connection.
	Startup(params map[string]string, superuser bool) error
	// ParameterStatuses returns the parameters to report after
	// authentication, in order.
	ParameterStatuses() []session.Setting
	// ReportSettings reports the parameters that changed to w: at Sync,
	// as ExecSimple does at the end of a query string.
	ReportSettings(w session.ResultWriter) error
}

// parameterStatus is one ParameterStatus the server reports after startup.
type parameterStatus struct{ name, value string }

// startupParameterStatuses applies the startup parameters to sess and
// returns what the server reports to it, in the order PostgreSQL 15 sends
// them.
func startupParameterStatuses(sess Session, info StartupInfo) ([]parameterStatus, error) {
	ss, ok := sess.(settingsSession)
	if !ok {
		return initialParameterStatuses(info), nil
	}
	if err := ss.Startup(info.Params, info.Superuser); err != nil {
		return nil, err
	}
	var out []parameterStatus
	for _, s := range ss.ParameterStatuses() {
		out = append(out, parameterStatus{s.Name, s.Value})
	}
	return out, nil
}

// initialParameterStatuses returns what the server reports to a session
// that keeps no parameters of its own.
func initialParameterStatuses(info StartupInfo) []parameterStatus {
	return []parameterStatus{
		{"application_name", info.ApplicationName},
		{"client_encoding", "UTF8"},
		{"DateStyle", "ISO, MDY"},
		{"default_transaction_read_only", "off"},
		{"in_hot_standby", "off"},
		{"integer_datetimes", "on"},
		{"IntervalStyle", "postgres"},
		{"is_superuser", onOff(info.Superuser)},
		{"server_encoding", "UTF8"},
		{"server_version", ServerVersion},
		{"session_authorization", info.User},
		{"standard_conforming_strings", "on"},
		{"TimeZone", "UTC"},
	}
}

// ServerVersion is the PostgreSQL version deeplaked reports to clients.
const ServerVersion = session.ServerVersion

// String implements fmt.Stringer for log lines.
func (p startupPacket) String() string {
	switch p.code {
	case codeCancelRequest:
		return "CancelRequest"
	case codeSSLRequest:
		return "SSLRequest"
	case codeGSSENCRequest:
		return "GSSENCRequest"
	}
	return fmt.Sprintf("StartupMessage %d.%d", p.major(), p.minor())
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
