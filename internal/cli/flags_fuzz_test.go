package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/internal/fuzzbound"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/redact"
)

// Fuzz targets of the flag parsers: what a user types is outside input too
// (issue 8). Each parser accepts exactly its documented range, keeps what
// it parsed as it was given, and refuses anything else with one line.

// checkOneLine fails t when err's message is empty or spans lines.
func checkOneLine(t *testing.T, what string, err error) {
	t.Helper()
	if msg := err.Error(); msg == "" || strings.ContainsAny(msg, "\r\n") {
		t.Fatalf("%s: error is not one line: %q", what, msg)
	}
}

func FuzzDurationFlag(f *testing.F) {
	f.Add("90s", int64(0), int64(time.Hour))
	f.Add("9223372036854775807ns", int64(0), int64(quota.MaxPolicyWait))
	f.Add("-1ns", int64(0), int64(time.Second))
	f.Add("1e3s", int64(time.Second), int64(time.Hour))
	f.Add("", int64(0), int64(1))
	f.Fuzz(func(t *testing.T, v string, lo, hi int64) {
		fuzzbound.Run(t, func() {
			// Every duration flag's range starts at 0 or more: a negative
			// value is the "not set" of durationFlag.String.
			lo, hi = max(lo, 0), max(hi, 0)
			lo, hi := time.Duration(min(lo, hi)), time.Duration(max(lo, hi))
			d := time.Duration(-1)
			fl := durationFlag{p: &d, min: lo, max: hi}
			err := fl.Set(v)
			want, perr := time.ParseDuration(v)
			inRange := perr == nil && want >= lo && want <= hi
			if err != nil {
				checkOneLine(t, v, err)
				if inRange || d != -1 {
					t.Fatalf("Set(%q) in [%v, %v]: %v, value %v", v, lo, hi, err, d)
				}
				return
			}
			if !inRange || d != want {
				t.Fatalf("Set(%q) in [%v, %v] accepted %v", v, lo, hi, d)
			}
			// What the flag prints, it reads back the same.
			again := time.Duration(-1)
			if err := (durationFlag{p: &again, min: lo, max: hi}).Set(fl.String()); err != nil || again != d {
				t.Fatalf("Set(String() %q) = %v, %v; want %v", fl.String(), again, err, d)
			}
		})
	})
}

// policyDurations returns the duration flags policyFlags registers, by
// name, with their ranges.
func policyDurations(fs *flagSet) map[string]durationFlag {
	out := map[string]durationFlag{}
	fs.VisitAll(func(fl *flag.Flag) {
		if d, ok := fl.Value.(durationFlag); ok {
			out[fl.Name] = d
		}
	})
	return out
}

func FuzzPolicyFlags(f *testing.F) {
	names := func() []string {
		fs := newFlagSet("run", "")
		p := quota.DefaultPolicy()
		policyFlags(fs, &p)
		var out []string
		fs.VisitAll(func(fl *flag.Flag) { out = append(out, fl.Name) })
		return out
	}()
	for i, v := range []string{"9223372036854775807ns", "-1s", "1h", "CORE=5", "core=5", "500", "101", "NaN", "0"} {
		f.Add(uint8(i), v)
	}
	f.Fuzz(func(t *testing.T, which uint8, v string) {
		fuzzbound.Run(t, func() {
			name := names[int(which)%len(names)]
			fs := newFlagSet("run", "")
			p := quota.DefaultPolicy()
			policyFlags(fs, &p)
			ranges := policyDurations(fs)
			err := fs.parse(&Env{}, []string{"--" + name, v})
			if err == nil {
				err = p.Validate()
			}
			if err != nil {
				checkOneLine(t, name+"="+v, err)
				if d, ok := ranges[name]; ok {
					if got, perr := time.ParseDuration(v); perr == nil && got >= d.min && got <= d.max {
						t.Fatalf("--%s %q in [%v, %v] refused: %v", name, v, d.min, d.max, err)
					}
				}
				return
			}
			// Accepted: the policy holds what was typed, within range.
			if d, ok := ranges[name]; ok {
				got, _ := time.ParseDuration(v)
				if *d.p != got || got < d.min || got > d.max {
					t.Fatalf("--%s %q gave %v, range [%v, %v]", name, v, *d.p, d.min, d.max)
				}
			}
		})
	})
}

// parseReserve sets each comma-separated part of s on a new Reserve.
func parseReserve(s string) (quota.Reserve, error) {
	var r quota.Reserve
	if s == "" {
		return r, nil
	}
	for _, part := range strings.Split(s, ",") {
		if err := r.Set(part); err != nil {
			return r, err
		}
	}
	return r, nil
}

func FuzzReserveFlag(f *testing.F) {
	f.Add("500", "core=5")
	f.Add("CORE=5", "")
	f.Add(" graphql = 7 ", "-1")
	f.Add("core=9223372036854775808", "=1")
	f.Add("a=1=2", "search=0")
	f.Fuzz(func(t *testing.T, v1, v2 string) {
		fuzzbound.Run(t, func() {
			var r quota.Reserve
			for _, v := range []string{v1, v2} {
				before := r.String()
				err := r.Set(v)
				if err != nil {
					checkOneLine(t, v, err)
					if r.String() != before {
						t.Fatalf("Set(%q) failed and still changed the reserve: %q to %q", v, before, r.String())
					}
					continue
				}
				name, num, per := strings.Cut(v, "=")
				if !per {
					num = name
				}
				n, perr := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
				if perr != nil || n < 0 {
					t.Fatalf("Set(%q) accepted %q", v, num)
				}
				if per {
					res := strings.TrimSpace(name)
					if !quota.ValidResource(res) || r.For(res, quota.Unknown) != n {
						t.Fatalf("Set(%q): reserve of %q is %d", v, res, r.For(res, quota.Unknown))
					}
				} else if r.All == nil || *r.All != n {
					t.Fatalf("Set(%q): All = %v", v, r.All)
				}
			}
			// What the flag prints, it reads back the same.
			back, err := parseReserve(r.String())
			if err != nil || !reflect.DeepEqual(back, r) {
				t.Fatalf("String() %q reads back as %+v, %v; want %+v", r.String(), back, err, r)
			}
		})
	})
}

func FuzzDeadlineFlag(f *testing.F) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC).Unix()
	for _, v := range []string{"", "90m", "-1s", "0s", "721h", "9223372036854775807ns", "2026-12-01T00:00:00Z", "2026-11-30T09:00:00Z", "2026-11-30T10:00:00+99:00", "tomorrow"} {
		f.Add(v, now)
	}
	f.Fuzz(func(t *testing.T, v string, nowUnix int64) {
		fuzzbound.Run(t, func() {
			now := time.Unix(nowUnix%(1<<34), 0).UTC()
			got, err := parseDeadline(v, now)
			if err != nil {
				checkOneLine(t, v, err)
				if !got.IsZero() {
					t.Fatalf("parseDeadline(%q) failed with a time %v", v, got)
				}
				return
			}
			if !got.After(now) || got.Sub(now) > host.MaxDeadline {
				t.Fatalf("parseDeadline(%q) at %v = %v: not in (now, now+%v]", v, now, got, host.MaxDeadline)
			}
			if v == "" && !got.Equal(now.Add(host.DefaultDeadline)) {
				t.Fatalf("no deadline gave %v", got)
			}
			if d, perr := time.ParseDuration(v); perr == nil && !got.Equal(now.Add(d)) {
				t.Fatalf("parseDeadline(%q) = %v, want now + %v", v, got, d)
			}
		})
	})
}

// serveFlags are serve's own flags (the policy flags are FuzzPolicyFlags').
var serveFlags = []string{"resume-rate", "lease", "heartbeat", "concurrency"}

// serveAccepts reports whether serve should accept v for flag name, the
// others at their defaults: the ranges its usage states.
func serveAccepts(name, v string) bool {
	switch name {
	case "resume-rate":
		r, err := strconv.ParseFloat(v, 64)
		return err == nil && !math.IsNaN(r) && r >= host.MinResumeRate && r <= host.MaxResumeRate
	case "lease":
		d, err := time.ParseDuration(v)
		return err == nil && d >= time.Second && d <= host.MaxLease && d > host.DefaultHeartbeat
	case "heartbeat":
		d, err := time.ParseDuration(v)
		return err == nil && d >= 100*time.Millisecond && d <= host.MaxLease && d < host.DefaultLease
	case "concurrency":
		n, err := strconv.ParseInt(v, 0, strconv.IntSize)
		return err == nil && n > 0
	}
	return false
}

func FuzzServeFlags(f *testing.F) {
	// A directory is no store: serve looks at the store first of all after
	// its flags and refuses it, so that refusal says the flags were
	// accepted. Nothing is opened or written.
	dir := f.TempDir()
	accepted := "layover: store " + dir + ": is a directory\n"
	for i, v := range []string{"NaN", "1e-300", "10", "0x1p-2", "Inf", "30s", "1h1s", "0", "-5", "9223372036854775807"} {
		f.Add(uint8(i), v)
	}
	f.Fuzz(func(t *testing.T, which uint8, v string) {
		fuzzbound.Run(t, func() {
			name := serveFlags[int(which)%len(serveFlags)]
			var stdout, stderr bytes.Buffer
			env := &Env{Stdout: &stdout, Stderr: &stderr}
			code := Main(context.Background(), env, []string{"serve", "--" + name, v, "--store", dir})
			line := strings.TrimSuffix(stderr.String(), "\n")
			switch {
			case code != ExitUsage:
				t.Fatalf("serve --%s %q: exit %d: %s", name, v, code, stderr.String())
			case stderr.String() == accepted:
				if !serveAccepts(name, v) {
					t.Fatalf("serve --%s %q accepted", name, v)
				}
			case line == "" || strings.ContainsAny(line, "\r\n") || !strings.Contains(line, name):
				t.Fatalf("serve --%s %q: %q; want one line naming the flag", name, v, stderr.String())
			case serveAccepts(name, v):
				t.Fatalf("serve --%s %q refused: %s", name, v, line)
			}
		})
	})
}

// decodedStrings returns every string token of JSON data, object keys
// included, read with a json.Decoder (checkpoint decodes otherwise).
func decodedStrings(data string) []string {
	var out []string
	dec := json.NewDecoder(strings.NewReader(data))
	for {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		if s, ok := tok.(string); ok {
			out = append(out, s)
		}
	}
}

// checkpointEnv is a job's environment for FuzzCheckpointInput: fence and
// GH_TOKEN as fuzzed, and a GITHUB_TOKEN so that no input makes checkpoint
// ask gh for a token.
func checkpointEnv(fence, token string) map[string]string {
	return map[string]string{"LAYOVER_JOB_ID": "job-1", "LAYOVER_FENCE": fence, "GH_TOKEN": token, "GITHUB_TOKEN": "fallback-token-0"}
}

// checkpointAccepts reports whether layover checkpoint should store stage
// and data in env: a stage, data that is JSON (or none), a fence that is a
// whole number >= 0, and no secret in the stage, in the data as written or
// in any string it decodes to (docs/secrets.md).
func checkpointAccepts(stage, data string, env map[string]string) bool {
	if n, err := strconv.ParseInt(env["LAYOVER_FENCE"], 10, 64); err != nil || n < 0 || stage == "" || data != "" && !json.Valid([]byte(data)) {
		return false
	}
	// A stage is at most 200 bytes of printable UTF-8, the data 64 KiB.
	if len(stage) > 200 || !utf8.ValidString(stage) || strings.ContainsFunc(stage, func(r rune) bool { return !unicode.IsPrint(r) }) || len(data) > 64<<10 {
		return false
	}
	known := redact.KnownSecrets(func(k string) string { return env[k] })
	for _, s := range append([]string{stage, data}, decodedStrings(data)...) {
		if redact.Contains(s, known...) {
			return false
		}
	}
	return true
}

func FuzzCheckpointInput(f *testing.F) {
	// As in FuzzServeFlags, a directory for a store: checkpoint refuses it
	// right after checking its input, so that refusal says the input was
	// accepted, and nothing is stored.
	dir := f.TempDir()
	accepted := "layover: store " + dir + ": is a directory\n"
	f.Add("fetched", `{"page":3}`, "1", "test-token-1")
	f.Add("", "", "1", "")
	f.Add("s", `{"a":"\u0067hp_abcdefghijklmnopqrstuvwxyz0123456789"}`, "2", "")
	f.Add("s", `"hunter2hunter2"`, "0", "hunter2hunter2")
	f.Add("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "", "1", "")
	f.Add("s", `{"a":`, "-1", "")
	f.Add("s", `[1,2]`, "9223372036854775808", "p&ssw0rd<1>")
	f.Add("s", `"p\u0026ssw0rd\u003c1\u003e"`, "3", "p&ssw0rd<1>")
	f.Fuzz(func(t *testing.T, stage, data, fence, token string) {
		fuzzbound.Run(t, func() {
			env := checkpointEnv(fence, token)
			var stdout, stderr bytes.Buffer
			e := &Env{Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string { return env[k] }}
			code := Main(context.Background(), e, []string{"checkpoint", "--stage=" + stage, "--data=" + data, "--store", dir})
			out := stderr.String()
			want := checkpointAccepts(stage, data, env)
			switch {
			case code != ExitUsage || stdout.Len() != 0:
				t.Fatalf("checkpoint %q %q (fence %q): exit %d, stdout %q: %s", stage, data, fence, code, stdout.String(), out)
			case out == accepted:
				if !want {
					t.Fatalf("checkpoint accepted stage %q, data %q, fence %q with token %q", stage, data, fence, token)
				}
			case want:
				t.Fatalf("checkpoint refused stage %q, data %q, fence %q: %s", stage, data, fence, out)
			case strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n"):
				t.Fatalf("checkpoint: want one error line, got %q", out)
			}
			known := redact.KnownSecrets(func(k string) string { return env[k] })
			for _, s := range []string{stage, data} {
				if redact.Contains(s, known...) && strings.Contains(out, s) {
					t.Fatalf("checkpoint's error quotes %q, which holds a secret: %s", s, out)
				}
			}
		})
	})
}
