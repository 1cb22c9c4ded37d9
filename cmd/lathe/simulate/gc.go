package simulate

import (
	"os"
	"runtime"
	"runtime/debug"
)

// firstCollectionAt is how much memory a `lathe simulate` process may take before its first garbage
// collection. The command is short-lived and allocates in bursts (the catalog, the decoded manifests, the
// plan): with Go's default pacing, a run over 1,000 pods collects five times while its heap climbs from
// 4 MB to 30 MB, and those collections were about a quarter of its CPU time. Most runs now finish before
// the first one; a larger input is collected as usual from this point on.
const firstCollectionAt = 64 << 20

// deferFirstCollection holds garbage collection back until the process uses firstCollectionAt, then
// restores the default pacing. It does nothing when GOGC or GOMEMLIMIT are set: the user chose.
func deferFirstCollection() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	percent := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(firstCollectionAt)
	// The marker is unreachable as soon as this returns, so the first collection frees it and its cleanup
	// puts the pacing back. It holds a pointer so that it has an allocation of its own (small pointer-free
	// objects may share one, and then their cleanups need not run).
	marker := &struct{ _ *int }{}
	runtime.AddCleanup(marker, func(struct{}) {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}, struct{}{})
}
