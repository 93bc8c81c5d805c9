package wire

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/deeplaked/deeplaked/pgerror"
)

func TestReadStartupPacket(t *testing.T) {
	tests := []struct {
		name    string
		in      []byte
		code    uint32
		body    string
		wantErr error
		sqlcode pgerror.Code
	}{
		{name: "ssl", in: packet(codeSSLRequest, nil), code: codeSSLRequest},
		{name: "startup", in: packet(pgproto3.ProtocolVersion30, []byte("user\x00u\x00\x00")), code: pgproto3.ProtocolVersion30, body: "user\x00u\x00\x00"},
		{name: "empty", in: nil, wantErr: io.EOF},
		{name: "short header", in: []byte{0, 0}, wantErr: io.ErrUnexpectedEOF},
		{name: "short code", in: []byte{0, 0, 0, 8, 0}, wantErr: io.ErrUnexpectedEOF},
		{name: "short body", in: []byte{0, 0, 0, 12, 0, 3, 0, 0, 'a'}, wantErr: io.ErrUnexpectedEOF},
		{name: "length 7", in: []byte{0, 0, 0, 7, 0, 3, 0, 0}, sqlcode: pgerror.ProtocolViolation},
		{name: "length 10001", in: []byte{0, 0, 0x27, 0x11, 0, 3, 0, 0}, sqlcode: pgerror.ProtocolViolation},
		{name: "negative length", in: []byte{0xff, 0xff, 0xff, 0xff, 0, 3, 0, 0}, sqlcode: pgerror.ProtocolViolation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := bytes.NewReader(tt.in)
			p, err := readStartupPacket(r, nil)
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
			case tt.sqlcode != "":
				if pgerror.GetCode(err) != tt.sqlcode {
					t.Fatalf("err = %v, want SQLSTATE %s", err, tt.sqlcode)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				if p.code != tt.code || string(p.body) != tt.body {
					t.Fatalf("got code %d body %q", p.code, p.body)
				}
				if r.Len() != 0 {
					t.Fatalf("%d bytes left unread", r.Len())
				}
			}
		})
	}
}

func TestReadStartupPacketReadsOnlyItsBytes(t *testing.T) {
	in := append(packet(codeSSLRequest, nil), packet(pgproto3.ProtocolVersion30, startupBody("user", "u"))...)
	r := bytes.NewReader(in)
	if p, err := readStartupPacket(r, nil); err != nil || p.code != codeSSLRequest {
		t.Fatalf("first packet: %v %v", p, err)
	}
	if p, err := readStartupPacket(r, nil); err != nil || p.code != pgproto3.ProtocolVersion30 {
		t.Fatalf("second packet: %v %v", p, err)
	}
}

func TestParseStartupParams(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		params    map[string]string
		pqOptions []string
		bad       bool
	}{
		{name: "user only", body: "user\x00u\x00\x00", params: map[string]string{"user": "u"}},
		{name: "several", body: "user\x00u\x00database\x00d\x00application_name\x00\x00\x00",
			params: map[string]string{"user": "u", "database": "d", "application_name": ""}},
		{name: "protocol options", body: "_pq_.x\x001\x00user\x00u\x00\x00", params: map[string]string{"user": "u"}, pqOptions: []string{"_pq_.x"}},
		{name: "empty", body: "\x00", params: map[string]string{}},
		{name: "nothing", body: "", bad: true},
		{name: "no terminator", body: "user\x00u\x00", bad: true},
		{name: "missing value", body: "user\x00", bad: true},
		{name: "bytes after terminator", body: "user\x00u\x00\x00\x00", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params, pq, err := parseStartupParams([]byte(tt.body))
			if tt.bad {
				if pgerror.GetCode(err) != pgerror.ProtocolViolation {
					t.Fatalf("err = %v, want 08P01", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(params, tt.params) || !equalStrings(pq, tt.pqOptions) {
				t.Fatalf("got %v %v, want %v %v", params, pq, tt.params, tt.pqOptions)
			}
		})
	}
}

func TestStartupInfoOf(t *testing.T) {
	info, err := startupInfoOf(map[string]string{"user": "u", "application_name": "app", "options": "-c x=1"})
	if err != nil {
		t.Fatal(err)
	}
	if info.User != "u" || info.Database != "u" || info.ApplicationName != "app" || info.Params["options"] != "-c x=1" {
		t.Fatalf("info = %+v", info)
	}
	if _, err := startupInfoOf(map[string]string{"database": "d"}); pgerror.GetCode(err) != pgerror.InvalidAuthorization {
		t.Fatalf("no user: %v, want 28000", err)
	}
}
