package wire

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

// fakeRoles is a RoleSource over a map of passwords.
type fakeRoles map[string]string

func (f fakeRoles) LookupRole(name string) (RoleCredentials, bool, error) {
	pw, ok := f[name]
	if !ok {
		return RoleCredentials{}, false, nil
	}
	salt := []byte("0123456789abcdef")
	salted, _ := pbkdf2.Key(sha256.New, pw, salt, 4096, sha256.Size)
	stored := sha256.Sum256(hmacSHA256(salted, []byte("Client Key")))
	return RoleCredentials{Login: true, SCRAM: &SCRAMSecret{
		Iterations: 4096, Salt: salt, StoredKey: stored[:], ServerKey: hmacSHA256(salted, []byte("Server Key")),
	}}, true, nil
}

// scramClient runs the client side of SCRAM-SHA-256 by hand with the GS2
// header gs2 and returns the server's final message or its FATAL code.
func scramClient(t *testing.T, c *rawConn, user, password, gs2 string) (verified bool, fatal string) {
	t.Helper()
	c.writeRaw(packet(3<<16, startupBody("user", user)))
	sasl, ok := c.receive().(*pgproto3.AuthenticationSASL)
	if !ok || len(sasl.AuthMechanisms) != 1 || sasl.AuthMechanisms[0] != "SCRAM-SHA-256" {
		t.Fatalf("got %#v, want AuthenticationSASL SCRAM-SHA-256", sasl)
	}
	clientFirstBare := "n=,r=clientnonce123"
	c.send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte(gs2 + clientFirstBare)})
	m := c.receive()
	if er, ok := m.(*pgproto3.ErrorResponse); ok {
		return false, er.Code
	}
	cont, ok := m.(*pgproto3.AuthenticationSASLContinue)
	if !ok {
		t.Fatalf("got %#v, want AuthenticationSASLContinue", m)
	}
	serverFirst := string(cont.Data)
	nonce, _ := scramAttr(serverFirst, 'r')
	saltB64, _ := scramAttr(serverFirst, 's')
	if !strings.HasPrefix(nonce, "clientnonce123") || len(nonce) <= len("clientnonce123") {
		t.Fatalf("server nonce %q", nonce)
	}
	salt, _ := base64.StdEncoding.DecodeString(saltB64)
	salted, _ := pbkdf2.Key(sha256.New, password, salt, 4096, sha256.Size)
	clientKey := hmacSHA256(salted, []byte("Client Key"))
	stored := sha256.Sum256(clientKey)
	withoutProof := "c=" + base64.StdEncoding.EncodeToString([]byte(gs2)) + ",r=" + nonce
	authMessage := []byte(clientFirstBare + "," + serverFirst + "," + withoutProof)
	sig := hmacSHA256(stored[:], authMessage)
	proof := make([]byte, len(sig))
	for i := range sig {
		proof[i] = clientKey[i] ^ sig[i]
	}
	c.send(&pgproto3.SASLResponse{Data: []byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof))})
	m = c.receive()
	if er, ok := m.(*pgproto3.ErrorResponse); ok {
		return false, er.Code
	}
	final, ok := m.(*pgproto3.AuthenticationSASLFinal)
	if !ok {
		t.Fatalf("got %#v, want AuthenticationSASLFinal", m)
	}
	want := "v=" + base64.StdEncoding.EncodeToString(hmacSHA256(hmacSHA256(salted, []byte("Server Key")), authMessage))
	if !hmac.Equal(final.Data, []byte(want)) {
		t.Fatalf("server signature %q, want %q", final.Data, want)
	}
	if _, ok := c.receive().(*pgproto3.AuthenticationOk); !ok {
		t.Fatal("no AuthenticationOk after SASLFinal")
	}
	return true, ""
}

// TestSCRAMExchange runs SCRAM-SHA-256 with a client written from the RFC.
func TestSCRAMExchange(t *testing.T) {
	ts := startTestServerOpts(t, Options{Auth: AuthSCRAM, Roles: fakeRoles{"alice": "pencil"}})
	for _, c := range []struct {
		name, user, pw, gs2, fatal string
	}{
		{"ok", "alice", "pencil", "n,,", ""},
		{"client could bind", "alice", "pencil", "y,,", ""},
		{"wrong password", "alice", "pen", "n,,", "28P01"},
		{"unknown user", "bob", "pencil", "n,,", "28P01"},
		{"channel binding", "alice", "pencil", "p=tls-server-end-point,,", "08P01"},
		{"bad gs2", "alice", "pencil", "x,,", "08P01"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rc := dialRaw(t, ts)
			ok, fatal := scramClient(t, rc, c.user, c.pw, c.gs2)
			if fatal != c.fatal || ok != (c.fatal == "") {
				t.Fatalf("verified=%v fatal=%q, want fatal %q", ok, fatal, c.fatal)
			}
			if ok {
				rc.expectReady()
			}
		})
	}
}

// TestSCRAMWrongMechanism refuses a mechanism that was not offered.
func TestSCRAMWrongMechanism(t *testing.T) {
	ts := startTestServerOpts(t, Options{Auth: AuthSCRAM, Roles: fakeRoles{"alice": "pencil"}})
	rc := dialRaw(t, ts)
	rc.writeRaw(packet(3<<16, startupBody("user", "alice")))
	if _, ok := rc.receive().(*pgproto3.AuthenticationSASL); !ok {
		t.Fatal("want AuthenticationSASL")
	}
	rc.send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256-PLUS", Data: []byte("p=tls-unique,,n=,r=x")})
	rc.expectFatal("08P01")
}

// TestCleartextPassword checks AuthPassword against the verifier.
func TestCleartextPassword(t *testing.T) {
	ts := startTestServerOpts(t, Options{Auth: AuthPassword, Roles: fakeRoles{"alice": "pencil"}})
	for _, c := range []struct{ user, pw, fatal string }{{"alice", "pencil", ""}, {"alice", "x", "28P01"}, {"bob", "pencil", "28P01"}} {
		rc := dialRaw(t, ts)
		rc.writeRaw(packet(3<<16, startupBody("user", c.user)))
		if _, ok := rc.receive().(*pgproto3.AuthenticationCleartextPassword); !ok {
			t.Fatal("want AuthenticationCleartextPassword")
		}
		rc.send(&pgproto3.PasswordMessage{Password: c.pw})
		if c.fatal == "" {
			if got := rc.expectReady(); got[0] != "R" {
				t.Fatalf("got %v", got)
			}
			continue
		}
		er := rc.expectFatal(c.fatal)
		if er.Message != `password authentication failed for user "`+c.user+`"` {
			t.Fatalf("message %q", er.Message)
		}
	}
}

func TestParseAuthMethod(t *testing.T) {
	for _, s := range []string{"trust", "scram", "md5", "password"} {
		m, err := ParseAuthMethod(s)
		if err != nil || m.String() != s {
			t.Errorf("ParseAuthMethod(%q) = %v, %v", s, m, err)
		}
	}
	if _, err := ParseAuthMethod("ident"); err == nil {
		t.Error("ParseAuthMethod(ident) accepted")
	}
}

// FuzzSCRAMClientFirst feeds arbitrary client-first messages to the SCRAM
// parser.
func FuzzSCRAMClientFirst(f *testing.F) {
	for _, s := range []string{"n,,n=,r=abc", "y,,n=u,r=x", "p=tls-unique,,n=,r=x", "n,a=u,n=,r=x", "", "n", "n,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		gs2, bare, err := splitGS2Header(msg)
		if err != nil {
			return
		}
		if gs2+bare != msg {
			t.Fatalf("split %q into %q + %q", msg, gs2, bare)
		}
		_, _ = scramAttr(bare, 'r')
	})
}
