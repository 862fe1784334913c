package analyst

import (
	"cmp"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// DefaultLimits returns the session limits of an analysis for the fields
// a request leaves zero. They are the sessions' defaults
// (sandbox.DefaultSessionLimits: 2 GiB of memory) but for time, which is
// larger: 5 minutes per cell, not one, since the profile of a large file
// takes longer than a notebook's cell. DiskBytes, left zero, becomes
// the datasets' size plus sandbox.DefaultLimits().DiskBytes for the
// program's own files. Each call returns a value of its own.
func DefaultLimits() sandbox.Limits { return defaultLimits }

// defaultLimits is what DefaultLimits returns.
var defaultLimits = sandbox.Limits{
	WallTimeMS:  300_000,
	CPUTimeMS:   300_000,
	MemoryBytes: sandbox.DefaultSessionLimits().MemoryBytes,
	OutputBytes: MaxProfileBytes,
}

// SessionLimits is the one place an analysis's session limits are
// computed, for Open and for the service's analyses: lim with its wall
// time, CPU time, memory and output left zero taken from DefaultLimits(),
// and its disk left zero the datasets' size plus
// sandbox.DefaultLimits().DiskBytes, each default lowered to maxima. The
// fields lim sets are kept as they are: checking them against the
// maxima is the caller's.
func SessionLimits(lim sandbox.Limits, datasets []Dataset, maxima sandbox.Limits) sandbox.Limits {
	var size int64
	for _, d := range datasets {
		size += int64(len(d.Content))
	}
	d := defaultLimits
	lim.WallTimeMS = cmp.Or(lim.WallTimeMS, min(d.WallTimeMS, maxima.WallTimeMS))
	lim.CPUTimeMS = cmp.Or(lim.CPUTimeMS, min(d.CPUTimeMS, maxima.CPUTimeMS))
	lim.MemoryBytes = cmp.Or(lim.MemoryBytes, min(d.MemoryBytes, maxima.MemoryBytes))
	lim.OutputBytes = cmp.Or(lim.OutputBytes, min(d.OutputBytes, maxima.OutputBytes))
	lim.DiskBytes = cmp.Or(lim.DiskBytes, min(size+sandbox.DefaultLimits().DiskBytes, maxima.DiskBytes))
	return lim
}
