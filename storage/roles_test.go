package storage

import (
	"strings"
	"testing"

	"github.com/deeplaked/deeplaked/pgerror"
)

func TestRoles(t *testing.T) {
	db := openMem(t, 0)
	pw := "hunter2"
	if err := db.CreateRole("alice", true, false, &pw); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateRole("bob", false, true, nil); err != nil {
		t.Fatal(err)
	}
	wantCode(t, db.CreateRole("alice", false, false, nil), pgerror.DuplicateObject)
	wantCode(t, db.AlterRole("nobody", RoleChange{}), pgerror.UndefinedObject)
	_, err := db.DropRole("nobody", false)
	wantCode(t, err, pgerror.UndefinedObject)
	if dropped, err := db.DropRole("nobody", true); err != nil || dropped {
		t.Fatalf("DROP ROLE IF EXISTS nobody = %v, %v", dropped, err)
	}

	r, err := db.Role("alice")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Login || r.Superuser || !CheckPassword(r.Verifier, pw) || CheckPassword(r.Verifier, "hunter3") {
		t.Fatalf("alice = %+v", r)
	}
	if strings.Contains(r.Verifier, pw) || !strings.HasPrefix(r.Verifier, "SCRAM-SHA-256$4096:") {
		t.Fatalf("verifier %q", r.Verifier)
	}
	off, npw := false, "new"
	if err := db.AlterRole("alice", RoleChange{Login: &off, Password: &npw}); err != nil {
		t.Fatal(err)
	}
	if r, _ := db.Role("alice"); r.Login || !CheckPassword(r.Verifier, npw) {
		t.Fatalf("after ALTER: %+v", r)
	}
	if err := db.AlterRole("alice", RoleChange{ClearPassword: true}); err != nil {
		t.Fatal(err)
	}
	if r, _ := db.Role("alice"); r.Verifier != "" {
		t.Fatalf("PASSWORD NULL left %q", r.Verifier)
	}
	roles, err := db.Roles()
	if err != nil || len(roles) != 2 || roles[0].Name != "alice" || roles[1].Name != "bob" {
		t.Fatalf("Roles() = %v, %v", roles, err)
	}
	if dropped, err := db.DropRole("alice", false); err != nil || !dropped {
		t.Fatalf("DROP ROLE alice = %v, %v", dropped, err)
	}
	_, err = db.Role("alice")
	wantCode(t, err, pgerror.UndefinedObject)
}

// TestSCRAMVerifier checks the verifier format against PostgreSQL's and
// that two verifiers of one password differ by their salt.
func TestSCRAMVerifier(t *testing.T) {
	a, err := NewSCRAMVerifier("pw")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewSCRAMVerifier("pw")
	if a == b {
		t.Fatal("two verifiers share a salt")
	}
	s, err := ParseSCRAMVerifier(a)
	if err != nil || s.Iterations != SCRAMIterations || len(s.Salt) != 16 {
		t.Fatalf("ParseSCRAMVerifier(%q) = %+v, %v", a, s, err)
	}
	for _, bad := range []string{"", "md5abc", "SCRAM-SHA-256$x:AA==$AA==:AA==", "SCRAM-SHA-256$4096:AA==$AA==", "SCRAM-SHA-256$4096:!!$AA==:AA=="} {
		if _, err := ParseSCRAMVerifier(bad); err == nil {
			t.Errorf("ParseSCRAMVerifier(%q) accepted", bad)
		}
		if CheckPassword(bad, "") {
			t.Errorf("CheckPassword(%q) accepted", bad)
		}
	}
}

// TestSCRAMVerifierKnownAnswer checks a verifier against one computed
// independently (Python's hashlib.pbkdf2_hmac and hmac).
func TestSCRAMVerifierKnownAnswer(t *testing.T) {
	salt := make([]byte, 16)
	for i := range salt {
		salt[i] = byte(i)
	}
	got, err := scramVerifier("pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	const want = "SCRAM-SHA-256$4096:AAECAwQFBgcICQoLDA0ODw==$zHCdol2044/ZyWzPLi7oxApCkamKw9Z+E4U/QApd/5Y=:dd5peBOitVnLNFu7VmwP+HiDaaw4OUCv396eVCWhYiE="
	if got != want {
		t.Fatalf("verifier = %q, want %q", got, want)
	}
}
