package server

import (
	"testing"

	"github.com/deeplaked/deeplaked/wire"
)

func TestAuthMethodDefault(t *testing.T) {
	for _, c := range []struct {
		spec, listen string
		want         wire.AuthMethod
	}{
		{"", "127.0.0.1:5433", wire.AuthTrust},
		{"", "localhost:5433", wire.AuthTrust},
		{"", "[::1]:5433", wire.AuthTrust},
		{"", "0.0.0.0:5433", wire.AuthSCRAM},
		{"", ":5433", wire.AuthSCRAM},
		{"", "10.1.2.3:5433", wire.AuthSCRAM},
		{"trust", "0.0.0.0:5433", wire.AuthTrust},
		{"password", "127.0.0.1:5433", wire.AuthPassword},
		{"md5", "127.0.0.1:5433", wire.AuthMD5},
	} {
		got, err := authMethod(c.spec, c.listen)
		if err != nil || got != c.want {
			t.Errorf("authMethod(%q, %q) = %v, %v; want %v", c.spec, c.listen, got, err, c.want)
		}
	}
	if _, err := authMethod("ident", "127.0.0.1:1"); err == nil {
		t.Error("authMethod(ident) accepted")
	}
	if _, err := loadTLS("cert.pem", ""); err == nil {
		t.Error("loadTLS with no key accepted")
	}
}
