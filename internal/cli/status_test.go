package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/internal/cli"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store/sqlite"
)

// A state records what was observed; below the reserve is decided when
// status reads it, against status's own --reserve: a cause some writer
// stored against its reserve is not shown.
func TestStatusDecidesBelowReserveWhenRead(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	path := filepath.Join(t.TempDir(), "layover.db")
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	at := func(resource string, remaining int64, cause quota.Cause) quota.State {
		return quota.State{Key: quota.Key{Host: "api.github.com", Principal: "octocat", Resource: resource},
			Limit: 5000, Remaining: remaining, ResetAt: now.Add(time.Hour), ResetKnown: true,
			ObservedAt: now, ObservedBy: "h", Source: quota.SourceHeaders, Cause: cause}
	}
	if err := st.RecordStates(context.Background(), []quota.State{
		at("core", 100, quota.CauseNone),
		at("graphql", 0, quota.CauseExhausted),
		// An older writer's cause, against its own reserve.
		at("search", 4000, quota.CauseBelowReserve),
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	causes := func(args ...string) map[string]any {
		t.Helper()
		var out, errb bytes.Buffer
		env := &cli.Env{Stdout: &out, Stderr: &errb, Clock: clock.NewFake(now), Getenv: func(string) string { return "" }}
		if code := cli.Main(context.Background(), env, append([]string{"status", "--json", "--store", path}, args...)); code != 0 {
			t.Fatalf("status %v: exit %d %s", args, code, errb.String())
		}
		var s struct {
			Quota []struct {
				Resource string
				Cause    any
			}
		}
		if err := json.Unmarshal(out.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		got := map[string]any{}
		for _, q := range s.Quota {
			got[q.Resource] = q.Cause
		}
		return got
	}
	for _, tt := range []struct {
		args []string
		want map[string]any
	}{
		{nil, map[string]any{"core": "below-reserve", "graphql": "exhausted", "search": nil}},
		{[]string{"--reserve", "100"}, map[string]any{"core": nil, "graphql": "exhausted", "search": nil}},
		{[]string{"--reserve", "core=101"}, map[string]any{"core": "below-reserve", "graphql": "exhausted", "search": nil}},
	} {
		got := causes(tt.args...)
		for res, want := range tt.want {
			if got[res] != want {
				t.Errorf("status %v: %s cause = %v, want %v", tt.args, res, got[res], want)
			}
		}
	}
}
