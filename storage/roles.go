package storage

import (
	"bytes"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/deeplaked/deeplaked/pgerror"
)

// Role is a login identity. It is stored as JSON under m/role/<name>; the
// password is kept only as a SCRAM-SHA-256 verifier, never in clear.
type Role struct {
	Name      string
	Login     bool
	Superuser bool
	// NoInherit is NOINHERIT: the role does not use the privileges of the
	// roles it is a member of without SET ROLE.
	NoInherit bool `json:",omitempty"`
	// CreateDB lets the role create databases (CREATEDB).
	CreateDB bool `json:",omitempty"`
	// Verifier is PostgreSQL's "SCRAM-SHA-256$<iter>:<salt>$<StoredKey>:<ServerKey>",
	// or "" when the role has no password (it then cannot log in with
	// password authentication).
	Verifier string `json:",omitempty"`
}

// RoleChange is an ALTER ROLE: each non-nil field replaces the role's.
type RoleChange struct {
	Login     *bool
	Superuser *bool
	Inherit   *bool
	CreateDB  *bool
	// Password sets a new password; ClearPassword removes it.
	Password      *string
	ClearPassword bool
}

// SCRAMIterations is the PBKDF2 iteration count of new verifiers
// (PostgreSQL's scram_iterations default).
const SCRAMIterations = 4096

// rolesMu serializes role writes so that create/alter/drop check and write
// atomically.
var rolesMu sync.Mutex

// Role returns the named role, or a 42704 error if there is none.
func (db *DB) Role(name string) (*Role, error) {
	v, closer, err := db.kv.Get(roleKey(name))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, pgerror.Newf(pgerror.UndefinedObject, "role %q does not exist", name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading role %q: %w", name, err)
	}
	defer closer.Close()
	var r Role
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, fmt.Errorf("decoding role %q: %w: %w", name, err, ErrCorruption)
	}
	return &r, nil
}

// Roles returns every role in name order.
func (db *DB) Roles() ([]*Role, error) {
	hi := prefixEnd(rolePrefix)
	it, err := db.kv.NewIter(&pebble.IterOptions{LowerBound: rolePrefix, UpperBound: hi})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []*Role
	for it.First(); it.Valid(); it.Next() {
		var r Role
		if err := json.Unmarshal(it.Value(), &r); err != nil {
			return nil, fmt.Errorf("decoding role %q: %w: %w", bytes.TrimPrefix(it.Key(), rolePrefix), err, ErrCorruption)
		}
		out = append(out, &r)
	}
	return out, it.Error()
}

// CreateRole stores a new role; password, if non-nil, is hashed into a
// SCRAM verifier. A role of that name already existing is 42710.
func (db *DB) CreateRole(name string, login, superuser bool, password *string) error {
	return db.CreateRoleWith(Role{Name: name, Login: login, Superuser: superuser}, password)
}

// CreateRoleWith is CreateRole of a role with r's name and attributes
// (its Verifier is ignored).
func (db *DB) CreateRoleWith(role Role, password *string) error {
	rolesMu.Lock()
	defer rolesMu.Unlock()
	defer db.rolesChanged()
	name := role.Name
	if _, err := db.Role(name); err == nil {
		return pgerror.Newf(pgerror.DuplicateObject, "role %q already exists", name)
	} else if !isUndefined(err) {
		return err
	}
	r := &role
	r.Verifier = ""
	if password != nil {
		v, err := NewSCRAMVerifier(*password)
		if err != nil {
			return err
		}
		r.Verifier = v
	}
	return db.putRole(r)
}

// AlterRole applies ch to the named role (42704 if it does not exist).
func (db *DB) AlterRole(name string, ch RoleChange) error {
	rolesMu.Lock()
	defer rolesMu.Unlock()
	defer db.rolesChanged()
	r, err := db.Role(name)
	if err != nil {
		return err
	}
	if ch.Login != nil {
		r.Login = *ch.Login
	}
	if ch.Superuser != nil {
		r.Superuser = *ch.Superuser
	}
	if ch.Inherit != nil {
		r.NoInherit = !*ch.Inherit
	}
	if ch.CreateDB != nil {
		r.CreateDB = *ch.CreateDB
	}
	if ch.ClearPassword {
		r.Verifier = ""
	}
	if ch.Password != nil {
		v, err := NewSCRAMVerifier(*ch.Password)
		if err != nil {
			return err
		}
		r.Verifier = v
	}
	return db.putRole(r)
}

// DropRole removes the named role and its memberships. A missing role is
// 42704 unless ifExists, in which case DropRole reports false; a role that
// owns tables or holds privileges is 2BP01, as in PostgreSQL.
func (db *DB) DropRole(name string, ifExists bool) (bool, error) {
	rolesMu.Lock()
	defer rolesMu.Unlock()
	defer db.rolesChanged()
	if _, err := db.Role(name); err != nil {
		if ifExists && isUndefined(err) {
			return false, nil
		}
		return false, err
	}
	if deps := db.roleDependents(name); len(deps) > 0 {
		return false, pgerror.Newf(pgerror.DependentObjectsStillExist, "role \"%s\" cannot be dropped because some objects depend on it", name).
			WithDetail("%s", strings.Join(deps, "\n"))
	}
	b := db.kv.NewBatch()
	defer b.Close()
	err := db.dropMemberships(b, name)
	if err == nil {
		err = b.Delete(roleKey(name), nil)
	}
	if err == nil {
		err = db.commitDDL(b)
	}
	if err != nil {
		return false, fmt.Errorf("dropping role %q: %w", name, err)
	}
	return true, nil
}

func (db *DB) putRole(r *Role) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := db.syncSet(roleKey(r.Name), data); err != nil {
		return fmt.Errorf("writing role %q: %w", r.Name, err)
	}
	return nil
}

func isUndefined(err error) bool {
	var pe *pgerror.Error
	return errors.As(err, &pe) && pe.Code == pgerror.UndefinedObject
}

// NewSCRAMVerifier hashes password into a SCRAM-SHA-256 verifier in
// PostgreSQL's format with a random 16-byte salt.
func NewSCRAMVerifier(password string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	return scramVerifier(password, salt, SCRAMIterations)
}

func scramVerifier(password string, salt []byte, iter int) (string, error) {
	salted, err := pbkdf2.Key(sha256.New, password, salt, iter, sha256.Size)
	if err != nil {
		return "", err
	}
	clientKey := hmacSHA256(salted, "Client Key")
	storedKey := sha256.Sum256(clientKey)
	serverKey := hmacSHA256(salted, "Server Key")
	b64 := base64.StdEncoding.EncodeToString
	return "SCRAM-SHA-256$" + strconv.Itoa(iter) + ":" + b64(salt) + "$" + b64(storedKey[:]) + ":" + b64(serverKey), nil
}

// SCRAMSecret is a parsed SCRAM-SHA-256 verifier.
type SCRAMSecret struct {
	Iterations int
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
}

// ParseSCRAMVerifier splits a verifier made by NewSCRAMVerifier.
func ParseSCRAMVerifier(v string) (SCRAMSecret, error) {
	bad := errors.New("malformed SCRAM-SHA-256 verifier")
	rest, ok := strings.CutPrefix(v, "SCRAM-SHA-256$")
	if !ok {
		return SCRAMSecret{}, bad
	}
	iterSalt, keys, ok := strings.Cut(rest, "$")
	if !ok {
		return SCRAMSecret{}, bad
	}
	iterS, saltS, ok1 := strings.Cut(iterSalt, ":")
	storedS, serverS, ok2 := strings.Cut(keys, ":")
	if !ok1 || !ok2 {
		return SCRAMSecret{}, bad
	}
	var s SCRAMSecret
	var err error
	if s.Iterations, err = strconv.Atoi(iterS); err != nil || s.Iterations < 1 {
		return SCRAMSecret{}, bad
	}
	dec := base64.StdEncoding.DecodeString
	if s.Salt, err = dec(saltS); err != nil {
		return SCRAMSecret{}, bad
	}
	if s.StoredKey, err = dec(storedS); err != nil || len(s.StoredKey) != sha256.Size {
		return SCRAMSecret{}, bad
	}
	if s.ServerKey, err = dec(serverS); err != nil || len(s.ServerKey) != sha256.Size {
		return SCRAMSecret{}, bad
	}
	return s, nil
}

// CheckPassword reports whether password matches the SCRAM verifier v, for
// cleartext password authentication.
func CheckPassword(v, password string) bool {
	s, err := ParseSCRAMVerifier(v)
	if err != nil {
		return false
	}
	w, err := scramVerifier(password, s.Salt, s.Iterations)
	if err != nil {
		return false
	}
	ws, err := ParseSCRAMVerifier(w)
	if err != nil {
		return false
	}
	return hmac.Equal(ws.StoredKey, s.StoredKey) && hmac.Equal(ws.ServerKey, s.ServerKey)
}

func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}
