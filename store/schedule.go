package store

import (
	"encoding/json"
	"errors"
	"time"
)

// ErrScheduleExists is AddSchedule's refusal of a name already taken when
// it is not told to replace it.
var ErrScheduleExists = errors.New("a schedule of that name exists")

// Schedule is a recurring pass `layover serve` runs (docs/schedules.md):
// at each slot of Cron in TZ, one host of the fleet claims the slot
// (ClaimSlot) and runs Argv under the admission of `layover pass`.
type Schedule struct {
	Name string // unique; letters, digits, '.', '_' and '-'
	Cron string // a cron expression: 5 fields or a descriptor (@hourly, @every 2s)
	TZ   string // the IANA time zone the expression is read in ("UTC", "Europe/Berlin")
	Argv []string
	// Quota is the pass's quota names (command.ParseQuotaName's form).
	Quota []string
	// Policy is the pass's policy flags as set when the schedule was
	// added (flag name -> value), a JSON object: applied over serve's
	// own policy. "{}" or empty: serve's as it is.
	Policy string
	// Missed is what a slot that no host claimed in time (all were down)
	// becomes when a host next looks: SlotRan (run once, the latest
	// missed slot only) or SlotMissed (recorded, not run).
	Missed    SlotResult
	CreatedAt time.Time // UTC, to the millisecond
}

// SlotResult is what became of a claimed slot.
type SlotResult string

// The results of a slot.
const (
	SlotRunning SlotResult = "running" // claimed, its pass under way (or its host died during it)
	SlotRan     SlotResult = "ran"     // the pass ran; Detail gives its exit code
	SlotSkipped SlotResult = "skipped" // admission refused the pass; Detail is the skip line
	SlotMissed  SlotResult = "missed"  // no host claimed it in time, and the schedule skips missed slots
	SlotFailed  SlotResult = "failed"  // the pass could not be admitted or started; Detail says why
)

// Slot is one claimed slot of a schedule: claimed once across the fleet.
type Slot struct {
	Schedule  string
	At        time.Time // the slot's time, UTC, to the millisecond
	HostID    string    // the host that claimed it
	ClaimedAt time.Time
	Result    SlotResult
	Detail    string // "exit 0", a skip line, "missed: …"
	// Late is set when the slot was claimed after its time had passed
	// unclaimed (all hosts down): a missed slot, run or recorded.
	Late bool
}

// EncodeStrings is a list of strings as a backend stores it: a JSON array
// ("[]" for none).
func EncodeStrings(v []string) string {
	if v == nil {
		v = []string{}
	}
	b, _ := json.Marshal(v) // a []string always marshals
	return string(b)
}

// DecodeStrings reads EncodeStrings' form back; nil for an empty array.
func DecodeStrings(s string) ([]string, error) {
	var v []string
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, err
	}
	if len(v) == 0 {
		return nil, nil
	}
	return v, nil
}

// PolicyJSON is s.Policy as stored: "{}" when empty.
func (s Schedule) PolicyJSON() string {
	if s.Policy == "" {
		return "{}"
	}
	return s.Policy
}
