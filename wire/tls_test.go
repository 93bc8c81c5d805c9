package wire

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// testTLSConfig returns a server config with a self-signed certificate.
func testTLSConfig(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}

// sslRequest sends an SSLRequest on c and returns the one-byte answer.
func sslRequest(t *testing.T, c *rawConn) byte {
	t.Helper()
	c.writeRaw(packet(codeSSLRequest, nil))
	var b [1]byte
	if _, err := io.ReadFull(c.nc, b[:]); err != nil {
		t.Fatal(err)
	}
	return b[0]
}

// TestTLSStartup upgrades to TLS after an SSLRequest and runs the startup
// over it; a second SSLRequest inside TLS is a protocol violation.
func TestTLSStartup(t *testing.T) {
	ts := startTestServerOpts(t, Options{TLS: testTLSConfig(t)})
	for _, second := range []bool{false, true} {
		c := dialRaw(t, ts)
		if got := sslRequest(t, c); got != 'S' {
			t.Fatalf("SSLRequest answered %q, want S", got)
		}
		tc := tls.Client(c.nc, &tls.Config{InsecureSkipVerify: true})
		if err := tc.Handshake(); err != nil {
			t.Fatal(err)
		}
		tlsConn := &rawConn{t: t, nc: tc, fe: pgproto3.NewFrontend(tc, tc)}
		if second {
			tlsConn.writeRaw(packet(codeSSLRequest, nil))
			tlsConn.expectFatal("08P01")
			continue
		}
		tlsConn.writeRaw(packet(3<<16, startupBody("user", "u")))
		if got := tlsConn.expectReady(); got[0] != "R" {
			t.Fatalf("startup over TLS: %v", got)
		}
	}
	// GSSENCRequest is still refused with N.
	c := dialRaw(t, ts)
	c.writeRaw(packet(codeGSSENCRequest, nil))
	c.expectN()
}

// TestShutdownDuringTLSHandshake ends a connection stalled after 'S'.
func TestShutdownDuringTLSHandshake(t *testing.T) {
	ts := startTestServerOpts(t, Options{TLS: testTLSConfig(t)})
	c := dialRaw(t, ts)
	if got := sslRequest(t, c); got != 'S' {
		t.Fatalf("SSLRequest answered %q, want S", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := ts.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}

// TestMaxConnectionsWire refuses the connection beyond the limit once it
// has authenticated, as PostgreSQL does: AuthenticationOk, then FATAL.
func TestMaxConnectionsWire(t *testing.T) {
	ts := startTestServerOpts(t, Options{MaxConnections: 1})
	a := dialRaw(t, ts)
	a.writeRaw(packet(3<<16, startupBody("user", "u")))
	a.expectReady()
	b := dialRaw(t, ts)
	b.writeRaw(packet(3<<16, startupBody("user", "u")))
	if m, ok := b.receive().(*pgproto3.AuthenticationOk); !ok {
		t.Fatalf("got %#v, want AuthenticationOk", m)
	}
	if er := b.expectFatal("53300"); er.Message != "sorry, too many clients already" {
		t.Fatalf("message %q", er.Message)
	}
}
