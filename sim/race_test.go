//go:build race

package sim

// raceEnabled reports a build with the race detector (the lane tests run
// fewer lanes under it).
const raceEnabled = true
