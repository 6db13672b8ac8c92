package schedule

import (
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
)

// Interrupted is the result shown (never stored) for a slot whose pass will
// never finish: the store still says store.SlotRunning, but the host that
// claimed it is no longer live, so its serve stopped (killed, or its machine
// died) during the pass. docs/schedules.md.
const Interrupted store.SlotResult = "interrupted"

// Shown returns sl as `schedule list` and the console show it at now, given
// the fleet's hosts: a running slot whose host is unknown or not live has
// the result Interrupted and a detail naming the host. Any other slot is
// returned as it is.
func Shown(sl store.Slot, hosts []job.Host, now time.Time) store.Slot {
	if sl.Result != store.SlotRunning {
		return sl
	}
	for _, h := range hosts {
		if h.ID == sl.HostID && h.Live(now) {
			return sl
		}
	}
	sl.Result = Interrupted
	sl.Detail = "host " + sl.HostID + " stopped during the pass"
	return sl
}
