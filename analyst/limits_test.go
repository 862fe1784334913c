package analyst

import (
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestSessionLimits: the defaults fill what a request leaves zero, the
// disk grows with the datasets, every default is lowered to the maxima,
// and what the request sets is kept.
func TestSessionLimits(t *testing.T) {
	data := []Dataset{{Name: "a.csv", Content: make([]byte, 1000)}, {Name: "b.csv", Content: make([]byte, 24)}}
	disk := 1024 + sandbox.DefaultLimits.DiskBytes
	low := sandbox.Limits{WallTimeMS: 1000, CPUTimeMS: 2000, MemoryBytes: sandbox.GiB, OutputBytes: 1 << 20, DiskBytes: 4096}
	cases := []struct {
		name     string
		lim      sandbox.Limits
		datasets []Dataset
		maxima   sandbox.Limits
		want     sandbox.Limits
	}{
		{"defaults", sandbox.Limits{}, data, sandbox.MaxLimits, sandbox.Limits{WallTimeMS: 300_000, CPUTimeMS: 300_000,
			MemoryBytes: 2 * sandbox.GiB, OutputBytes: MaxProfileBytes, DiskBytes: disk}},
		{"no datasets", sandbox.Limits{}, nil, sandbox.MaxLimits, sandbox.Limits{WallTimeMS: 300_000, CPUTimeMS: 300_000,
			MemoryBytes: 2 * sandbox.GiB, OutputBytes: MaxProfileBytes, DiskBytes: sandbox.DefaultLimits.DiskBytes}},
		{"defaults lowered to the maxima", sandbox.Limits{}, data, low, low},
		{"set fields kept", sandbox.Limits{WallTimeMS: 7, MemoryBytes: 3 * sandbox.GiB, DiskBytes: 9, Processes: 5}, data, low,
			sandbox.Limits{WallTimeMS: 7, CPUTimeMS: 2000, MemoryBytes: 3 * sandbox.GiB, OutputBytes: 1 << 20, DiskBytes: 9, Processes: 5}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := SessionLimits(c.lim, c.datasets, c.maxima); got != c.want {
				t.Errorf("SessionLimits = %+v, want %+v", got, c.want)
			}
		})
	}
}
