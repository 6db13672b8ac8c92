//go:build race

package fuzzbound

// raceFactor scales Bound under the race detector, whose instrumentation
// makes code about ten times slower.
const raceFactor = 10
