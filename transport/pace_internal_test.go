package transport

import (
	"testing"
	"time"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// The pacer's history keeps one sample per 10 s bucket, the newest, and
// nothing older than 15 min and a bucket before the newest: an hour of
// observations a second apart keeps 92 (14:44:49 to 14:59:59).
func TestPaceHistoryIsBounded(t *testing.T) {
	p := newPacer(nil, func(string, ...any) {})
	key := quota.Key{Host: "api.github.com", Principal: "octo", Resource: "core"}
	start := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	for i := range 3600 {
		at := start.Add(time.Duration(i) * time.Second)
		p.observe([]quota.State{{Key: key, Remaining: int64(5000 - i), ResetAt: start.Add(2 * time.Hour), ObservedAt: at}})
	}
	got := p.keys[key].samples
	if len(got) != 92 {
		t.Fatalf("kept %d samples, want 92", len(got))
	}
	for i, s := range got {
		if i > 0 && store.ObservationBucket(s.At) <= store.ObservationBucket(got[i-1].At) {
			t.Fatalf("samples %d and %d share a bucket or are out of order", i-1, i)
		}
		if s.At.Second()%10 != 9 && i != len(got)-1 {
			t.Errorf("sample %d at %v is not its bucket's newest", i, s.At)
		}
	}
	if last := got[len(got)-1]; last.Remaining != 5000-3599 {
		t.Errorf("newest remaining %d", last.Remaining)
	}
	// An older observation does not replace its bucket's newer one.
	p.observe([]quota.State{{Key: key, Remaining: 1, ResetAt: start.Add(2 * time.Hour), ObservedAt: got[len(got)-1].At.Add(-time.Second)}})
	if last := p.keys[key].samples[len(p.keys[key].samples)-1]; last.Remaining == 1 {
		t.Error("an older observation replaced the bucket's newest")
	}
}
