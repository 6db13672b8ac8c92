package view

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
)

func TestJobLeavesHistoryOutAndDetailHasEmptyArrays(t *testing.T) {
	j := job.Job{ID: "job-1", State: job.Ready, Stage: "ready", Spec: job.Spec{Argv: []string{"true"}}}
	list, err := json.Marshal(NewJob(j))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"attempts"`, `"transitions"`, `"receipts"`, `"checks"`, `"cleanup"`} {
		if strings.Contains(string(list), key) {
			t.Errorf("jobs object has %s: %s", key, list)
		}
	}
	if !strings.Contains(string(list), `"env_names":[]`) || !strings.Contains(string(list), `"deadline":null`) {
		t.Errorf("jobs object: want empty env_names and a null deadline: %s", list)
	}
	detail, err := json.Marshal(NewJobDetail(j, job.History{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"attempts":[]`, `"transitions":[]`, `"receipts":[]`, `"checks":[]`, `"receipt_owners":[]`, `"cleanup":null`} {
		if !strings.Contains(string(detail), want) {
			t.Errorf("show object lacks %s: %s", want, detail)
		}
	}
}

func TestQuotaBelowReserveWaitsForTheReset(t *testing.T) {
	now := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	reset := now.Add(time.Hour)
	key := quota.Key{Host: "api.github.com", Principal: "octo", Resource: "core"}
	states := []quota.State{
		{Key: key, Limit: 5000, Remaining: 10, ResetAt: reset, ResetKnown: true, ObservedAt: now},
		{Key: quota.Key{Host: "api.github.com", Principal: "octo", Resource: "search"}, Limit: 30, Remaining: -1,
			ResetAt: reset, ObservedAt: now},
	}
	got := Quotas(states, quota.DefaultPolicy(), now)
	if got[0].Cause != string(quota.CauseBelowReserve) || got[0].WaitUntil != "2026-12-02T06:00:00Z" || got[0].InWait {
		t.Errorf("below reserve: got %+v", got[0])
	}
	if got[1].Remaining != nil || got[1].ResetAt != nil || got[1].WaitUntil != nil {
		t.Errorf("unknown remaining and assumed reset: got %+v", got[1])
	}
}

func TestStatusCarriesBurnAndExhaustion(t *testing.T) {
	now := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	reset := now.Add(20 * time.Minute)
	core := quota.Key{Host: "api.github.com", Principal: "octo", Resource: "core"}
	gql := quota.Key{Host: "api.github.com", Principal: "octo", Resource: "graphql"}
	states := []quota.State{
		{Key: core, Limit: 5000, Remaining: 1000, ResetAt: reset, ResetKnown: true, ObservedAt: now},
		{Key: gql, Limit: 5000, Remaining: 4000, ResetAt: reset, ResetKnown: true, ObservedAt: now},
	}
	samples := func(left ...int64) []quota.Sample {
		var out []quota.Sample
		for i, l := range left {
			out = append(out, quota.Sample{At: now.Add(time.Duration(i-len(left)+1) * time.Minute), Remaining: l, ResetAt: reset})
		}
		return out
	}
	history := map[quota.Key][]quota.Sample{core: samples(1200, 1100, 1000), gql: samples(4020, 4010, 4000)}
	got := NewStatus(states, history, nil, nil, nil, quota.DefaultPolicy(), now)
	// core: 100/min, 0 in 10 minutes, before the reset; graphql: 10/min,
	// 0 in 400 minutes, after it.
	if q := got.Quota[0]; q.BurnPerMin != float64(100) || q.ExhaustsAt != "2026-12-02T14:10:00Z" {
		t.Errorf("core: %+v", q)
	}
	if q := got.Quota[1]; q.BurnPerMin != float64(10) || q.ExhaustsAt != nil {
		t.Errorf("graphql: %+v", q)
	}
	data, err := json.Marshal(NewStatus(states, nil, nil, nil, nil, quota.DefaultPolicy(), now))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"burn_per_min":null,"exhausts_at":null`) {
		t.Errorf("no history: want null burn and exhaustion: %s", data)
	}
}
