//go:build race

package crashtest

const raceEnabled = true
