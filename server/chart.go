package server

import (
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// Chart geometry, in SVG user units.
const (
	chartW, chartH = 240.0, 60.0
	chartPad       = 2.0
)

// burnChart draws a key's remaining quota over time as inline SVG: one
// point per kept observation (store.Observations, oldest first; the latest
// state when none is kept), a line through them, and a mark at the reset.
// The y axis runs from 0 to the limit (or the most remaining seen when the
// limit is unknown); the x axis from the first observation to the reset or
// now, whichever is later. It holds only numbers layover computed, so it
// is safe to insert unescaped. reserve, when positive, is drawn as a dotted
// line: below it scheduled work waits.
func burnChart(obs []store.Observation, st quota.State, reserve int64, now time.Time) template.HTML {
	if len(obs) == 0 {
		obs = []store.Observation{store.ObservationOf(st)}
	}
	var known []store.Observation
	top := st.Limit
	for _, o := range obs {
		if o.Remaining < 0 {
			continue
		}
		known = append(known, o)
		top = max(top, o.Limit, o.Remaining)
	}
	if len(known) == 0 || top <= 0 {
		return ""
	}
	start, end := known[0].ObservedAt, now
	if st.ResetAt.After(end) {
		end = st.ResetAt
	}
	span := end.Sub(start).Seconds()
	if span <= 0 {
		span = 1
	}
	x := func(t time.Time) float64 {
		return chartPad + (chartW-2*chartPad)*t.Sub(start).Seconds()/span
	}
	y := func(n int64) float64 {
		return chartPad + (chartH-2*chartPad)*(1-float64(n)/float64(top))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="burn" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %g %g" width="%g" height="%g" role="img" aria-label="%d observations, remaining from %d to %d of %d">`,
		chartW, chartH, chartW, chartH, len(known), known[0].Remaining, known[len(known)-1].Remaining, top)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%g" height="%g" fill="#f6f6f6" stroke="#ccc"/>`, chartW, chartH)
	if st.ResetKnown && !st.ResetAt.IsZero() {
		rx := x(st.ResetAt)
		fmt.Fprintf(&b, `<line class="reset" x1="%.1f" y1="0" x2="%.1f" y2="%g" stroke="#888" stroke-dasharray="3,2"/>`, rx, rx, chartH)
	}
	if reserve > 0 && reserve <= top {
		fmt.Fprintf(&b, `<line class="reserve" x1="0" y1="%.1f" x2="%g" y2="%.1f" stroke="#d80" stroke-dasharray="1,2"/>`, y(reserve), chartW, y(reserve))
	}
	fmt.Fprintf(&b, `<line class="now" x1="%.1f" y1="0" x2="%.1f" y2="%g" stroke="#36c"/>`, x(now), x(now), chartH)
	var pts []string
	for _, o := range known {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(o.ObservedAt), y(o.Remaining)))
	}
	fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="#c33" stroke-width="1.5"/>`, strings.Join(pts, " "))
	for _, p := range pts {
		xy := strings.SplitN(p, ",", 2)
		fmt.Fprintf(&b, `<circle class="obs" cx="%s" cy="%s" r="2" fill="#c33"/>`, xy[0], xy[1])
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // numbers only, formatted above
}
