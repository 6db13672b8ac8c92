//go:build !race

package workflow_test

// raceEnabled reports a build with the race detector, whose tests scale
// their largest herds down.
const raceEnabled = false
