//go:build race

package iceberg_test

// raceEnabled slows the SIGKILL test's sources down: under the race
// detector the sinks commit several times slower.
const raceEnabled = true
