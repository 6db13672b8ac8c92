//go:build !race

package fuzzbound

// raceFactor scales Bound: 1 without the race detector (race.go).
const raceFactor = 1
