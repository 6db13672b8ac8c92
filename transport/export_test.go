package transport

// TimersArmed reports how many wait timers t has made on its shared
// per-key gates.
func TimersArmed(t *Transport) int64 { return t.gates.armed.Load() }

// OnUrgentQueued sets a hook the writer calls when an urgent write is
// queued behind a background one.
func OnUrgentQueued(t *Transport, f func()) { t.writer.urgentQueued = f }
