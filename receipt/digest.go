package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"unicode/utf8"
)

// ScopeDigest is bindings.scope_digest: the SHA-256 (lowercase hex) of the
// canonical JSON of {"keys":[...],"name":name,"workdir":workdir}. keys are
// the job's quota keys as "host/resource"; they are a set, so they are
// sorted and deduplicated first (the digest does not depend on their
// order). A string that is not valid UTF-8 is an error.
func ScopeDigest(name, workdir string, keys []string) (string, error) {
	if err := checkUTF8("scope", append([]string{name, workdir}, keys...)); err != nil {
		return "", err
	}
	return digestJSON(map[string]any{"name": name, "workdir": workdir, "keys": set(keys)})
}

// RequestDigest is bindings.request_digest: the SHA-256 of the canonical
// JSON of {"argv":[...],"env_names":[...],"resume_cmd":resumeCmd}. argv
// keeps its order; envNames (the variables the job declares) are a set,
// sorted and deduplicated. resumeCmd is the template as given (with
// "{session_id}" unexpanded), and "" (no resume command) is null. A string
// that is not valid UTF-8 is an error.
func RequestDigest(argv, envNames []string, resumeCmd string) (string, error) {
	all := append(append([]string{resumeCmd}, argv...), envNames...)
	if err := checkUTF8("request", all); err != nil {
		return "", err
	}
	if argv == nil {
		argv = []string{}
	}
	var resume any
	if resumeCmd != "" {
		resume = resumeCmd
	}
	return digestJSON(map[string]any{"argv": argv, "env_names": set(envNames), "resume_cmd": resume})
}

// PlanDigest is bindings.plan_digest: the SHA-256 of the output of the
// job's --plan-cmd, byte for byte. (A job without a plan has a null
// plan_digest: Bindings.PlanDigest "".)
func PlanDigest(output []byte) string {
	sum := sha256.Sum256(output)
	return hex.EncodeToString(sum[:])
}

// Digest is the SHA-256 of s in lowercase hex, for hashing handles such as
// a wake-up or cancellation id into ownership digests.
func Digest(s string) string { return PlanDigest([]byte(s)) }

func digestJSON(v any) (string, error) {
	b, err := CanonicalJSON(v)
	if err != nil {
		return "", err
	}
	return PlanDigest(b), nil
}

// set returns a sorted, deduplicated copy of ss (never nil).
func set(ss []string) []string {
	out := append([]string{}, ss...)
	sort.Strings(out)
	n := 0
	for i, s := range out {
		if i == 0 || s != out[n-1] {
			out[n] = s
			n++
		}
	}
	return out[:n]
}

func checkUTF8(what string, ss []string) error {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return fmt.Errorf("receipt: %s digest: %q is not valid UTF-8", what, s)
		}
	}
	return nil
}
