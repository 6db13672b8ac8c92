package storetest

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/layoverhq/layover/internal/fuzzbound"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
)

// Row is a row of column values as a backend's query returns them, for a
// backend's scan function under test: Scan assigns each value to its
// destination as database/sql and pgx do for the types the stores use (a
// value of the destination's type or convertible to it, a Scanner such as
// sql.NullString, a pointer for a nullable column, nil for NULL, text
// into []byte).
type Row []any

// Scan assigns r's values to dest, one each.
func (r Row) Scan(dest ...any) error {
	if len(dest) != len(r) {
		return fmt.Errorf("scan: %d destinations for %d columns", len(dest), len(r))
	}
	for i, d := range dest {
		if err := assign(d, r[i]); err != nil {
			return fmt.Errorf("scan column %d: %w", i, err)
		}
	}
	return nil
}

func assign(dest, src any) error {
	if s, ok := dest.(sql.Scanner); ok {
		return s.Scan(src)
	}
	d := reflect.ValueOf(dest).Elem()
	if src == nil {
		d.SetZero()
		return nil
	}
	s := reflect.ValueOf(src)
	switch {
	case s.Kind() == reflect.Pointer && s.IsNil():
		d.SetZero()
	case s.Type().AssignableTo(d.Type()):
		d.Set(s)
	case s.Type().ConvertibleTo(d.Type()) && s.Kind() == d.Kind():
		d.Set(s.Convert(d.Type()))
	case s.Kind() == reflect.String && d.Type() == reflect.TypeFor[[]byte]():
		// Text read into bytes (a JSON column).
		d.SetBytes([]byte(s.String()))
	case s.Kind() == reflect.Pointer && s.Elem().Kind() == reflect.String && d.Type() == reflect.TypeFor[[]byte]():
		d.SetBytes([]byte(s.Elem().String()))
	default:
		return fmt.Errorf("cannot put a %T in a %s", src, d.Type())
	}
	return nil
}

// FuzzJobRow fuzzes a backend's decoding of a job row: args gives the
// column values the backend writes for a job and its spec's JSON, scan
// reads a row back. Every column is fuzzed, the stored spec as any bytes:
// a row another host of the fleet wrote, or an older or damaged one, is
// outside input. A spec that is not a job spec's JSON is an error naming
// the stored spec; any other row decodes, and what it decodes to the
// backend writes and reads back the same.
func FuzzJobRow(f *testing.F, args func(j job.Job, spec []byte) []any, scan func(Row) (job.Job, error)) {
	f.Add("j1", []byte(`{"name":"nightly","argv":["gh","pr","list"],"deadline":"2026-12-01T10:00:00Z","max_attempts":3}`), "deferred", "fetched", "retained",
		int64(1764496800000), int64(1), "host-a", 2, false, true, "fetched", []byte(`{"page":3}`), 3, 1, "armed")
	f.Add("", []byte(`{"deadline":"2026-12-01T10:00:00+05:30","argv":null,"progress_timeout":-1}`), "", "", "", int64(0), int64(-1), "", -1, true, false, "", []byte(nil), 0, 0, "")
	f.Add("j2", []byte(`{"argv":"not a list"}`), "running", "", "", int64(-9223372036854775808), int64(9223372036854775807), "", 0, false, true, "", []byte("not json"), -1, 9223372036854775807, "running host-a")
	f.Add("j3", []byte(`{"name":"\u00e9\ud800","deadline":"0001-01-01T00:00:00Z"}`), "ready", "", "", int64(1), int64(0), "", 0, false, false, "", []byte{}, 1<<31, -(1<<31)-1, "failed: exit 2\n\u00e9")
	f.Add("j4", []byte(`{"argv":["gh","api","user"],"deadline":"2026-12-02T10:00:00Z"}`), "auth-wait", "Waiting for credentials since 2026-12-01T10:00:00Z", "",
		int64(1764583200000), int64(2), "", 1, false, false, "", []byte(nil), 2, 0, "done")
	f.Fuzz(func(t *testing.T, id string, spec []byte, state, stage, ownership string, ms, fence int64, owner string,
		attempts int, approved, hasCP bool, cpStage string, cpData []byte, runs, secondaries int,
		cleanup string) {
		fuzzbound.Run(t, func() {
			at := store.FromMS
			j := job.Job{ID: id, State: job.State(state), Stage: stage, Ownership: job.Ownership(ownership),
				CreatedAt: at(ms), UpdatedAt: at(ms ^ 1), RunAt: at(ms / 2), ResumeBy: at(-ms), LeaseUntil: at(ms >> 3), ProgressBy: at(ms << 1),
				Fence: fence, LeaseOwner: owner, Attempts: attempts, Probes: attempts / 3, Runs: runs, Secondaries: secondaries,
				Approved: approved, SessionID: owner + id, Cleanup: cleanup}
			if hasCP {
				j.Checkpoint = &job.Checkpoint{Stage: cpStage, Data: cpData, At: at(ms + 7)}
			}
			got, err := scan(Row(args(j, spec)))
			var want job.Spec
			if uerr := json.Unmarshal(spec, &want); uerr != nil {
				if err == nil || !strings.Contains(err.Error(), "stored spec") {
					t.Fatalf("spec %q is no job spec, yet the row read as %+v, %v", spec, got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("row with spec %q: %v", spec, err)
			}
			if !got.Spec.Equal(want) {
				t.Fatalf("spec %q read as %+v, want %+v", spec, got.Spec, want)
			}
			// Every column reads back as written.
			if w := store.MSJob(j); !reflect.DeepEqual(sameSpec(got, want), sameSpec(w, want)) {
				t.Fatalf("row read as %+v, want %+v", got, w)
			}
			// What it decoded to, the backend writes and reads back the same.
			spec2, err := json.Marshal(got.Spec)
			if err != nil {
				t.Fatalf("spec %q read as %+v, which does not encode: %v", spec, got.Spec, err)
			}
			again, err := scan(Row(args(got, spec2)))
			if err != nil || !again.Spec.Equal(got.Spec) || !reflect.DeepEqual(sameSpec(again, want), sameSpec(got, want)) {
				t.Fatalf("written again, %+v reads as %+v, %v", got, again, err)
			}
		})
	})
}

// sameSpec is j with spec s, so that jobs compare on their other fields.
func sameSpec(j job.Job, s job.Spec) job.Job {
	j.Spec = s
	return j
}
