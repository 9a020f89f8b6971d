//go:build race

package plugins

// raceEnabled: the test plugins are built with -race too, so that their
// packages come from the same build cache entries as the test's.
const raceEnabled = true
