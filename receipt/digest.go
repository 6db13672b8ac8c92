package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"time"
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

// Digest is the SHA-256 of s in lowercase hex.
func Digest(s string) string { return PlanDigest([]byte(s)) }

// Owner is what a retained receipt's ownership digests bind: values the
// durable host keeps beside the receipt, so that anyone reading the store
// can recompute them and prove which wake-up (and which cancellation
// handle) a receipt names (docs/receipt.md, Ownership digests).
type Owner struct {
	JobID  string
	HostID string // the durable host that recorded the wake-up
	// Fence is the claim the receipt was issued under (0 at submission).
	Fence int64
	// WakeAt is the wake-up the host recorded: the receipt's resume_after,
	// to the millisecond.
	WakeAt time.Time
}

// WakeupDigest is ownership.wakeup_digest: the SHA-256 of the canonical
// JSON of {"job","host","fence","wake_at_ms"}.
func (o Owner) WakeupDigest() string {
	d, _ := digestJSON(map[string]any{"job": o.JobID, "host": o.HostID, "fence": o.Fence, "wake_at_ms": ceilMs(o.WakeAt)})
	return d
}

// CancellationDigest is ownership.cancellation_digest: the SHA-256 of the
// canonical JSON of {"job","host","fence","cancel":true}: the handle with
// which that host cancels the wake-up.
func (o Owner) CancellationDigest() string {
	d, _ := digestJSON(map[string]any{"job": o.JobID, "host": o.HostID, "fence": o.Fence, "cancel": true})
	return d
}

// Names reports whether r's ownership digests are o's: r is retained and
// both digests match.
func (o Owner) Names(r *Receipt) bool {
	return r != nil && r.Ownership.Disposition == Retained &&
		r.Ownership.WakeupDigest == o.WakeupDigest() && r.Ownership.CancellationDigest == o.CancellationDigest()
}

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
