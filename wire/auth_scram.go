package wire

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/deeplaked/deeplaked/pgerror"
)

// scramMechanism is the only SASL mechanism offered; channel binding
// (SCRAM-SHA-256-PLUS) is not.
const scramMechanism = "SCRAM-SHA-256"

// mockIterations is the iteration count of made-up verifiers.
const mockIterations = 4096

// mockSecret returns a stable made-up verifier for a user who cannot log
// in, so that the exchange looks like one with a real role.
func (s *Server) mockSecret(user string) *SCRAMSecret {
	salt := hmacSHA256(s.mockKey, []byte("salt "+user))[:16]
	return &SCRAMSecret{
		Iterations: mockIterations,
		Salt:       salt,
		StoredKey:  hmacSHA256(s.mockKey, []byte("stored "+user)),
		ServerKey:  hmacSHA256(s.mockKey, []byte("server "+user)),
	}
}

// matchesPassword reports whether password hashes to the verifier.
func (s *SCRAMSecret) matchesPassword(password string) bool {
	salted, err := pbkdf2.Key(sha256.New, password, s.Salt, s.Iterations, sha256.Size)
	if err != nil {
		return false
	}
	stored := sha256.Sum256(hmacSHA256(salted, []byte("Client Key")))
	serverKey := hmacSHA256(salted, []byte("Server Key"))
	return hmac.Equal(stored[:], s.StoredKey) && hmac.Equal(serverKey, s.ServerKey)
}

func errMalformedSCRAM(detail string) error {
	return pgerror.Newf(pgerror.ProtocolViolation, "malformed SCRAM message: %s", detail)
}

// authSCRAM runs SASL SCRAM-SHA-256 (RFC 5802, RFC 7677) as PostgreSQL
// does: the user name in the client's first message is ignored in favour
// of the startup packet's, and channel binding is not supported (gs2 flag
// "n", or "y" from a client that would bind if the server offered it).
func (c *conn) authSCRAM(user string, secret *SCRAMSecret) error {
	c.send(&pgproto3.AuthenticationSASL{AuthMechanisms: []string{scramMechanism}})
	if err := c.flush(); err != nil {
		return err
	}
	mech, data, err := c.rd.receiveSASLInitial()
	if err != nil {
		return err
	}
	if mech != scramMechanism {
		return pgerror.New(pgerror.ProtocolViolation, "client selected an invalid SASL authentication mechanism")
	}
	clientFirst := string(data)
	gs2, clientFirstBare, err := splitGS2Header(clientFirst)
	if err != nil {
		return err
	}
	clientNonce, err := scramAttr(clientFirstBare, 'r')
	if err != nil {
		return err
	}
	var nonce [18]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return err
	}
	fullNonce := clientNonce + base64.StdEncoding.EncodeToString(nonce[:])
	serverFirst := "r=" + fullNonce + ",s=" + base64.StdEncoding.EncodeToString(secret.Salt) + ",i=" + strconv.Itoa(secret.Iterations)
	c.send(&pgproto3.AuthenticationSASLContinue{Data: []byte(serverFirst)})
	if err := c.flush(); err != nil {
		return err
	}
	data, err = c.rd.receiveSASL()
	if err != nil {
		return err
	}
	clientFinal := string(data)
	i := strings.LastIndex(clientFinal, ",p=")
	if i < 0 {
		return errMalformedSCRAM("could not find proof in client-final-message")
	}
	withoutProof := clientFinal[:i]
	proof, err := base64.StdEncoding.DecodeString(clientFinal[i+3:])
	if err != nil || len(proof) != sha256.Size {
		return errMalformedSCRAM("malformed proof in client-final-message")
	}
	binding, err := scramAttr(withoutProof, 'c')
	if err != nil {
		return err
	}
	if binding != base64.StdEncoding.EncodeToString([]byte(gs2)) {
		return pgerror.New(pgerror.ProtocolViolation, "SCRAM channel binding check failed")
	}
	if got, err := scramAttr(withoutProof, 'r'); err != nil || got != fullNonce {
		return errMalformedSCRAM("nonce mismatch")
	}

	authMessage := []byte(clientFirstBare + "," + serverFirst + "," + withoutProof)
	clientSig := hmacSHA256(secret.StoredKey, authMessage)
	clientKey := make([]byte, sha256.Size)
	for j := range clientKey {
		clientKey[j] = proof[j] ^ clientSig[j]
	}
	stored := sha256.Sum256(clientKey)
	if !hmac.Equal(stored[:], secret.StoredKey) {
		return errAuthFailed(user)
	}
	serverSig := hmacSHA256(secret.ServerKey, authMessage)
	c.send(&pgproto3.AuthenticationSASLFinal{Data: []byte("v=" + base64.StdEncoding.EncodeToString(serverSig))})
	return nil
}

// splitGS2Header splits client-first-message into its GS2 header
// ("n,," or "y,,", with an optional authzid) and the bare message.
func splitGS2Header(msg string) (gs2, bare string, err error) {
	if msg == "" {
		return "", "", errMalformedSCRAM("empty client-first-message")
	}
	switch msg[0] {
	case 'n', 'y':
	case 'p':
		return "", "", pgerror.New(pgerror.ProtocolViolation, "channel binding is not supported by this server")
	default:
		return "", "", errMalformedSCRAM("unexpected channel-binding flag")
	}
	parts := strings.SplitN(msg, ",", 3)
	if len(parts) != 3 || len(parts[0]) != 1 {
		return "", "", errMalformedSCRAM("malformed GS2 header")
	}
	if parts[1] != "" && !strings.HasPrefix(parts[1], "a=") {
		return "", "", errMalformedSCRAM("unexpected attribute in GS2 header")
	}
	return parts[0] + "," + parts[1] + ",", parts[2], nil
}

// scramAttr returns the value of attribute name in a comma-separated
// SCRAM message.
func scramAttr(msg string, name byte) (string, error) {
	for _, f := range strings.Split(msg, ",") {
		if len(f) >= 2 && f[0] == name && f[1] == '=' {
			return f[2:], nil
		}
	}
	return "", errMalformedSCRAM("attribute \"" + string(name) + "\" expected")
}

func hmacSHA256(key, msg []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return m.Sum(nil)
}
