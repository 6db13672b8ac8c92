// Package schedule runs layover's recurring passes inside `layover serve`
// (docs/schedules.md). A schedule is a cron expression in a time zone and
// a pass (a command and its quotas); at each of its slots one host of the
// fleet claims the slot in the store (store.Store.ClaimSlot: the first
// claim wins) and runs the pass under the admission of `layover pass`
// (command.AdmitPass). A slot no host claimed in time (all were down) is,
// when a host next looks, run once or recorded as missed, by the
// schedule's policy: only the latest such slot, never one run per slot
// missed.
//
// This file reads the expressions; runner.go is the loop.
package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// MaxExprBytes bounds a cron expression and a time zone name, in bytes.
const MaxExprBytes = 200

// parser reads the standard five fields (minute, hour, day of month,
// month, day of week) and the descriptors (@hourly, @daily, @every 90s…).
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Expr is a parsed cron expression read in its time zone. Its slots are
// fixed points in time every host computes alike: a five-field
// expression's are its matching minutes in the zone; @every D's are the
// multiples of D since the Unix epoch (D at least a second, whole
// seconds), so two hosts that look at different times agree on them.
type Expr struct {
	src   string
	loc   *time.Location
	spec  cron.Schedule
	every time.Duration // @every's interval; zero for the others
}

// Parse reads a cron expression and an IANA time zone name ("" is UTC).
// The zone comes only from tz: an expression carrying its own (TZ=…,
// CRON_TZ=…) is refused, as is "Local", which would differ from host to
// host.
func Parse(expr, tz string) (Expr, error) {
	expr = strings.TrimSpace(expr)
	switch {
	case expr == "":
		return Expr{}, errors.New("empty cron expression")
	case len(expr) > MaxExprBytes || len(tz) > MaxExprBytes:
		return Expr{}, fmt.Errorf("cron expression or time zone longer than %d bytes", MaxExprBytes)
	case strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ="):
		return Expr{}, errors.New("cron expression names a time zone: use --tz")
	}
	if tz == "" {
		tz = "UTC"
	}
	if tz == "Local" {
		return Expr{}, errors.New(`time zone "Local" differs from host to host: name one (e.g. Europe/Berlin) or UTC`)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return Expr{}, fmt.Errorf("unknown time zone %q", tz)
	}
	spec, err := parser.Parse(expr)
	if err != nil {
		return Expr{}, fmt.Errorf("cron expression %q: %v", expr, err)
	}
	e := Expr{src: expr, loc: loc, spec: spec}
	if cd, ok := spec.(cron.ConstantDelaySchedule); ok {
		e.every = cd.Delay
	} else if e.Next(time.Unix(0, 0)).IsZero() {
		return Expr{}, fmt.Errorf("cron expression %q: no time matches it", expr)
	}
	return e, nil
}

// String is the expression as given.
func (e Expr) String() string { return e.src }

// Location is the zone the expression is read in.
func (e Expr) Location() *time.Location { return e.loc }

// Next is the first slot strictly after t, in UTC; the zero time when none
// comes in the next five years (robfig/cron's search bound).
func (e Expr) Next(t time.Time) time.Time {
	if e.every > 0 {
		n := t.UnixNano() / int64(e.every)
		if t.UnixNano() < 0 && t.UnixNano()%int64(e.every) != 0 {
			n--
		}
		return time.Unix(0, (n+1)*int64(e.every)).UTC()
	}
	if e.spec == nil {
		return time.Time{}
	}
	return e.spec.Next(t.In(e.loc)).UTC()
}

// maxScan bounds each of Latest's walks over the slots of a gap.
const maxScan = 1_000_000

// latestSpans are the spans, ending at upTo, that Latest looks back over
// before the whole gap: an expression with a slot a year at least has its
// latest slot in the last of them.
var latestSpans = [...]time.Duration{time.Hour, 24 * time.Hour, 32 * 24 * time.Hour, 367 * 24 * time.Hour}

// Latest is the latest slot in (after, upTo], in UTC; ok is false when
// none falls there. A five-field expression is looked for over the last
// hour, day, month and year before upTo, then the whole gap; a walk of more
// than a million slots finds none rather than a slot that is not the
// latest (a year of a per-minute expression is half a million).
func (e Expr) Latest(after, upTo time.Time) (time.Time, bool) {
	if !upTo.After(after) {
		return time.Time{}, false
	}
	if e.every > 0 {
		last := e.Next(upTo.Add(-e.every)) // the slots are e.every apart: this one is at most upTo
		return last, last.After(after)
	}
	for _, span := range latestSpans {
		start := upTo.Add(-span)
		if !start.After(after) {
			break
		}
		if latest, ok := e.walk(start, upTo); ok {
			return latest, true
		}
	}
	return e.walk(after, upTo)
}

// walk is the latest slot in (from, upTo]; ok is false when none falls
// there or the walk passed maxScan slots before reaching upTo.
func (e Expr) walk(from, upTo time.Time) (time.Time, bool) {
	var latest time.Time
	t := e.Next(from)
	for i := 0; !t.IsZero() && !t.After(upTo); i++ {
		if i == maxScan {
			return time.Time{}, false
		}
		latest, t = t, e.Next(t)
	}
	return latest, !latest.IsZero()
}
