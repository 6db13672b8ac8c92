package transport

// TimersArmed reports how many wait timers t has made on its shared
// per-key gates.
func TimersArmed(t *Transport) int64 { return t.gates.armed.Load() }
