//go:build !(linux && (amd64 || arm64))

package file

// startWriteback starts writing a range of f to the disk where the system
// offers a way to (see writeback_linux.go); here it does nothing, and the
// fsync at the end of each batch writes everything.
func startWriteback(appendFile, int64, int64) error { return nil }

// dropCached frees the page-cache pages of a range of f where the system
// offers a way to (see writeback_linux.go); here it does nothing.
func dropCached(appendFile, int64, int64) error { return nil }
