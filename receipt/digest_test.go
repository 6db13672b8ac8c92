package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// The binding digests equal SHA-256 of hand-written canonical JSON, and,
// for two cases, fixed values computed outside Go (printf ... | sha256sum).
func TestDigests(t *testing.T) {
	t.Parallel()
	scope := func(name, workdir string, keys []string) func() (string, error) {
		return func() (string, error) { return ScopeDigest(name, workdir, keys) }
	}
	request := func(argv, env []string, resume string) func() (string, error) {
		return func() (string, error) { return RequestDigest(argv, env, resume) }
	}
	cases := []struct {
		name string
		got  func() (string, error)
		want string
	}{
		{"scope, fixed value", scope("nightly", "/srv/app", []string{"api.github.com/graphql", "api.github.com/core"}),
			"28edf4a7500e4d38ef0645575ef427f75a546b0c5127661be484abcf70a48233"},
		{"scope keys are a set", scope("nightly", "/srv/app", []string{"api.github.com/core", "api.github.com/graphql", "api.github.com/core"}),
			sha(`{"keys":["api.github.com/core","api.github.com/graphql"],"name":"nightly","workdir":"/srv/app"}`)},
		{"scope no keys", scope("", "/", nil), sha(`{"keys":[],"name":"","workdir":"/"}`)},
		{"scope escapes", scope("a\"b\\c", "/tmp/<x>&y\n", []string{"api.anthropic.com/tokens"}),
			sha(`{"keys":["api.anthropic.com/tokens"],"name":"a\"b\\c","workdir":"/tmp/<x>&y\n"}`)},
		{"request, fixed value", request([]string{"gh", "api", "/x?a=1&b=<2>", "naïve"}, []string{"HOME", "GH_TOKEN"}, "claude --resume {session_id}"),
			"5fad3632fe8d3e6fa518ce2d662fee72e3903afe89add40f6a1ffe826b066b37"},
		{"request empty, fixed value", request(nil, nil, ""), "06fda685d04c0f27bff38c48a627cc24ba305bab5184a2a52a46585e2324cf39"},
		{"request argv order kept", request([]string{"b", "a", "b"}, []string{"X", "X"}, "r"),
			sha(`{"argv":["b","a","b"],"env_names":["X"],"resume_cmd":"r"}`)},
		{"request control characters", request([]string{"sh", "-c", "echo\t\"hi\"\x01"}, nil, ""),
			sha(`{"argv":["sh","-c","echo\t\"hi\"\u0001"],"env_names":[],"resume_cmd":null}`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := c.got()
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("digest %s, want %s", got, c.want)
			}
			if !IsDigest(got) {
				t.Errorf("%q is not 64 lowercase hex", got)
			}
		})
	}
	if got := PlanDigest([]byte("abc")); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("PlanDigest(abc) = %s", got)
	}
	if got := PlanDigest(nil); got != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("PlanDigest(nil) = %s", got)
	}
	if Digest("abc") != PlanDigest([]byte("abc")) {
		t.Errorf("Digest differs from PlanDigest")
	}
	a, _ := RequestDigest([]string{"x"}, nil, "")
	b, _ := RequestDigest([]string{"x"}, nil, "{session_id}")
	if a == b {
		t.Errorf("resume_cmd does not change the request digest")
	}
}

// A string that is not UTF-8 is refused rather than coerced.
func TestDigestsRefuseInvalidUTF8(t *testing.T) {
	t.Parallel()
	if _, err := ScopeDigest("n", "/srv/\xff", nil); err == nil {
		t.Errorf("scope: accepted invalid UTF-8 workdir")
	}
	if _, err := ScopeDigest("n", "/", []string{"h/\xc3"}); err == nil {
		t.Errorf("scope: accepted invalid UTF-8 key")
	}
	if _, err := RequestDigest([]string{"a\xff"}, nil, ""); err == nil {
		t.Errorf("request: accepted invalid UTF-8 argv")
	}
	if _, err := RequestDigest(nil, []string{"\xff"}, ""); err == nil {
		t.Errorf("request: accepted invalid UTF-8 env name")
	}
	if _, err := RequestDigest(nil, nil, "\xff"); err == nil {
		t.Errorf("request: accepted invalid UTF-8 resume command")
	}
}

// The digest functions do not modify their arguments.
func TestDigestsKeepArguments(t *testing.T) {
	t.Parallel()
	keys := []string{"z/b", "a/c"}
	env := []string{"Z", "A"}
	if _, err := ScopeDigest("n", "/", keys); err != nil {
		t.Fatal(err)
	}
	if _, err := RequestDigest([]string{"x"}, env, ""); err != nil {
		t.Fatal(err)
	}
	if keys[0] != "z/b" || env[0] != "Z" {
		t.Errorf("arguments sorted in place: %v %v", keys, env)
	}
}

// A retained receipt's ownership digests name exactly one wake-up: the job,
// the host, the fence and the wake-up time each change them.
func TestOwnerDigests(t *testing.T) {
	t.Parallel()
	wake := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	o := Owner{JobID: "j", HostID: "host-a", Fence: 3, WakeAt: wake}
	p := Params{Reason: RESTReserve, IssuedAt: wake.Add(-time.Hour), ResumeAfter: wake, ResumeBy: wake.Add(time.Hour),
		Bindings: Bindings{ScopeDigest: sha("scope"), RequestDigest: sha("request")}}
	rc, err := NewRetained(p, o.WakeupDigest(), o.CancellationDigest())
	if err != nil {
		t.Fatal(err)
	}
	if !o.Names(rc) {
		t.Fatal("the owner does not match its own receipt")
	}
	if o.WakeupDigest() == o.CancellationDigest() {
		t.Fatal("the wake-up and the cancellation share a digest")
	}
	for name, other := range map[string]Owner{
		"job":   {JobID: "k", HostID: "host-a", Fence: 3, WakeAt: wake},
		"host":  {JobID: "j", HostID: "host-b", Fence: 3, WakeAt: wake},
		"fence": {JobID: "j", HostID: "host-a", Fence: 4, WakeAt: wake},
		"wake":  {JobID: "j", HostID: "host-a", Fence: 3, WakeAt: wake.Add(time.Millisecond)},
	} {
		if other.Names(rc) {
			t.Errorf("another %s matches the receipt", name)
		}
	}
	if h, err := NewHandoff(p); err != nil || o.Names(h) {
		t.Error("a handoff receipt names a wake-up")
	}
}
