package command

import (
	"context"
	"time"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// pacePass applies the pacing rule (quota.Policy.PaceAll, docs/pacing.md)
// to a pass the reserve rule admitted: the keys' states as the store now
// holds them and their histories of the last quota.BurnSpan, from every
// host. A refused pass writes one activity line per reason, as any skip
// does; refused is false when the pass may start.
func pacePass(ctx context.Context, cfg *PassConfig, quotas []Quota, now time.Time) (adm PassAdmission, refused bool, err error) {
	keys := KeysOf(quotas)
	states, err := cfg.Store.States(ctx, keys)
	if err != nil {
		return PassAdmission{}, false, &StoreError{Op: "read", Err: err}
	}
	history := map[quota.Key][]quota.Sample{}
	for _, k := range keys {
		obs, err := cfg.Store.Observations(ctx, k, now.Add(-quota.BurnSpan), 0)
		if err != nil {
			return PassAdmission{}, false, &StoreError{Op: "read", Err: err}
		}
		history[k] = store.Samples(obs)
	}
	d := cfg.Policy.PaceAll(states, func(k quota.Key) []quota.Sample { return history[k] }, now)
	if d.Admit {
		return PassAdmission{}, false, nil
	}
	line := cfg.LinePrefix + PassPacingLine(d)
	logged, err := cfg.Store.RecordSkip(ctx, cfg.scope(quotas), "pacing:"+PassSkipReason(d.State),
		store.Activity{At: now, Kind: "skip", Line: line})
	if err != nil {
		return PassAdmission{}, false, &StoreError{Op: "write", Err: err}
	}
	return PassAdmission{Quotas: quotas, Pacing: &d, SkipLine: line, Logged: logged}, true, nil
}

// PassPacingLine is the activity line of a pass that pacing refused:
// "skipped: pacing: core would run out at 14:12, before its reset at 14:20",
// clock times on this machine's time zone. A refusal of the plain rule
// (d.Block) reads "skipped: core below the reserve of 500, reset 14:20".
func PassPacingLine(d quota.Pacing) string {
	return "skipped: " + d.ReasonAt(func(t time.Time) string { return t.Local().Format("15:04") })
}
