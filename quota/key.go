package quota

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// Key names one quota: the provider host (e.g. "api.github.com"), the
// principal whose quota it is (a login, an organisation id, or "tok:" and a
// token fingerprint), and the provider's resource ("core", "graphql", ...).
type Key struct {
	Host      string
	Principal string
	Resource  string
}

// String renders the key as host/principal/resource.
func (k Key) String() string {
	return fmt.Sprintf("%s/%s/%s", k.Host, k.Principal, k.Resource)
}

// TokenFingerprint returns the first 12 lowercase hex digits of the token's
// SHA-256. It identifies a token without revealing it; the token itself is
// never stored.
func TokenFingerprint(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])[:12]
}

// TokenPrincipal is the principal used for a token whose owner is not yet
// known: "tok:" followed by its fingerprint.
func TokenPrincipal(token string) string {
	return "tok:" + TokenFingerprint(token)
}

// AnonymousPrincipal is the principal of unauthenticated calls, whose quota
// the provider keeps per client address.
const AnonymousPrincipal = "anonymous"
