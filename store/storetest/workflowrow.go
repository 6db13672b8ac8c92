package storetest

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fuzzbound"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/workflow/record"
)

// FuzzTaskRow fuzzes the decoding of a workflow task row: values gives the
// column values a store writes for a task, scan reads a row back. Every
// column is fuzzed, the quota and limited columns as any bytes: a row
// another host wrote, or an older or damaged one, is outside input. A
// quota or limited column that is not the JSON the stores write is an
// error naming it; any other row decodes, and what it decodes to is
// written and read back the same. A task the stores write reads back as
// written (store.MSTask).
func FuzzTaskRow(f *testing.F, values func(record.Task) []any, scan func(Row) (record.Task, error)) {
	f.Add("nightly-1", "review", "paused", "reviewing", 2, 5, "claude-code", "five_hour", "5-hour limit ∙ resets 4pm",
		int64(1764633600123), "claude", true, "fetched", []byte(`{"page":3}`), int64(4),
		[]byte(`{"provider":"claude-code","resource":"five_hour","reset_at_ms":1764633600123,"message":"limit"}`),
		[]byte(`{"claude":1764633600123,"codex":0}`))
	f.Add("", "", "", "", 0, 0, "", "", "", int64(0), "", false, "", []byte(nil), int64(0), []byte(nil), []byte(`{}`))
	f.Add("r", "t", "running", "\x00\xff", -1, 1<<40, "p\xff", "", "", int64(-9223372036854775808), "\xc3(", true, "",
		[]byte{}, int64(9223372036854775807), []byte(`{"reset_at_ms":1e30}`), []byte(`{"a":"soon"}`))
	f.Add("r", "t", "complete", "", 0, 0, "p", "r", "m", int64(1), "", false, "", []byte(nil), int64(1),
		[]byte(`null`), []byte(`null`))
	f.Add("r", "t", "failed", "", 0, 0, "p", "r", "m", int64(1), "", false, "", []byte(nil), int64(1),
		[]byte(`{"provider":"\u00e9\ud800","extra":[1,2]}`), []byte(`{"\ud800":-1,"b":9223372036854775807}`))
	f.Fuzz(func(t *testing.T, runID, name, state, stage string, attempts, starts int, provider, resource, message string,
		ms int64, candidate string, hasCP bool, cpStage string, cpData []byte, version int64, quotaCol, limitedCol []byte) {
		fuzzbound.Run(t, func() {
			// A task as the stores write it: its texts UTF-8, as
			// record.Task.Validate holds them (JSON would not keep
			// others).
			utf := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
			at := store.FromMS
			k := record.Task{RunID: runID, Name: name, State: record.TaskState(state), Stage: stage, Attempts: attempts,
				Starts: starts, Candidate: candidate, SessionID: name + runID, Workdir: stage, WaitingOn: message,
				JobID: runID + ":" + name, UpdatedAt: at(ms ^ 3), Version: version,
				Quota:   &record.Quota{Provider: utf(provider), Resource: utf(resource), ResetAt: at(ms), Message: utf(message)},
				Limited: map[string]time.Time{utf(candidate): at(ms / 2)}}
			if hasCP {
				k.Checkpoint = &job.Checkpoint{Stage: cpStage, Data: cpData, At: at(ms + 7)}
			}
			if provider == "" {
				k.Quota, k.Limited = nil, nil
			}
			got, err := scan(Row(values(k)))
			if err != nil {
				t.Fatalf("task %+v written reads as %v", k, err)
			}
			if want := store.MSTask(k); !reflect.DeepEqual(got, want) {
				t.Fatalf("task written as\n\t%s\nreads as\n\t%s", show(want), show(got))
			}

			// The same row with the JSON columns as found.
			row := Row(values(k))
			row[9], row[10] = quotaCol, limitedCol
			if quotaCol == nil {
				row[9] = (*string)(nil)
			}
			got, err = scan(row)
			_, qerr := store.DecodeQuota(quotaCol)
			_, lerr := store.DecodeLimited(limitedCol)
			switch {
			case qerr != nil || lerr != nil:
				if err == nil || !strings.Contains(err.Error(), "stored") {
					t.Fatalf("quota %q, limited %q read as %+v, %v; want an error naming the column", quotaCol, limitedCol, got, err)
				}
				return
			case err != nil:
				t.Fatalf("quota %q, limited %q: %v", quotaCol, limitedCol, err)
			}
			again, err := scan(Row(values(got)))
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("written again,\n\t%s\nreads as\n\t%s, %v", show(got), show(again), err)
			}
		})
	})
}
