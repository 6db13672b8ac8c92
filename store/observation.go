package store

import (
	"time"

	"github.com/layoverhq/layover/quota"
)

// The history of quota observations (Store.Observations) is bounded per
// key. RecordStates keeps, for each key, at most one observation per
// ObservationSpacing of observed time (a bucket: observed_at in
// milliseconds divided by the spacing's), the newest observed in that
// bucket, and only the buckets no more than ObservationsKept older than
// the key's newest one. So a key keeps at most ObservationsKept rows
// (512), and at least the last ObservationsKept × ObservationSpacing of
// its history (85 min 20 s, more than GitHub's one-hour window), however
// often it is observed.
const (
	// ObservationSpacing is the width of one bucket of the history.
	ObservationSpacing = 10 * time.Second
	// ObservationsKept is the most observations kept per key, in rows.
	ObservationsKept = 512
)

// ObservationBucket is the bucket an observation made at t falls in: its
// milliseconds since the epoch divided by ObservationSpacing's, floored.
func ObservationBucket(t time.Time) int64 {
	ms, w := MS(t), ObservationSpacing.Milliseconds()
	b := ms / w
	if ms%w < 0 {
		b--
	}
	return b
}

// Observation is one kept observation of a key's quota: what the console's
// burn chart draws and a burn rate reads.
type Observation struct {
	Key        quota.Key
	ObservedAt time.Time // UTC, to the millisecond
	Remaining  int64     // in the provider's units; quota.Unknown (-1) when not observed
	Limit      int64     // in the provider's units; quota.Unknown (-1) when not observed
	ResetAt    time.Time // when the provider said the quota refills (UTC, to the millisecond)
	ObservedBy string    // the hostname of the machine that observed it
}

// ObservationOf is the observation st records.
func ObservationOf(st quota.State) Observation {
	return Observation{Key: st.Key, ObservedAt: MSTime(st.ObservedAt), Remaining: st.Remaining,
		Limit: st.Limit, ResetAt: MSTime(st.ResetAt), ObservedBy: st.ObservedBy}
}

// Samples are the points of obs a burn rate reads (quota.BurnRate), in
// order.
func Samples(obs []Observation) []quota.Sample {
	out := make([]quota.Sample, len(obs))
	for i, o := range obs {
		out[i] = quota.Sample{At: o.ObservedAt, Remaining: o.Remaining, ResetAt: o.ResetAt}
	}
	return out
}
