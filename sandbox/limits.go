package sandbox

import (
	"fmt"
	"time"
)

// Size units, in bytes.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
)

// Limits bounds what one run may consume. A zero field means "use the
// default" (see DefaultLimits); a negative one is rejected. A Result carries
// the Limits actually applied, with every default filled in.
type Limits struct {
	// WallTimeMS is the wall-clock time the run may take, in milliseconds.
	// Exceeding it ends the run with StatusTimeout.
	WallTimeMS int64 `json:"wall_time_ms,omitempty"`
	// CPUTimeMS is the CPU time, summed over all the run's processes, in
	// milliseconds. Exceeding it ends the run with StatusCPULimit.
	CPUTimeMS int64 `json:"cpu_time_ms,omitempty"`
	// MemoryBytes caps the memory of all the run's processes together,
	// including files written to the working directory (a tmpfs is memory).
	// An out-of-memory kill ends the run with StatusMemoryLimit.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// Processes caps the number of processes and threads alive at once.
	Processes int64 `json:"processes,omitempty"`
	// OutputBytes caps stdout and stderr together. Reaching it stops the run
	// with StatusOutputLimit; what was read so far is kept.
	OutputBytes int64 `json:"output_bytes,omitempty"`
	// DiskBytes is the size of the writable working directory (and /tmp,
	// which shares it).
	DiskBytes int64 `json:"disk_bytes,omitempty"`
	// FileSizeBytes caps the size of any single file a process writes
	// (RLIMIT_FSIZE). Defaults to DiskBytes.
	FileSizeBytes int64 `json:"file_size_bytes,omitempty"`
	// OpenFiles caps the file descriptors each process may hold
	// (RLIMIT_NOFILE).
	OpenFiles int64 `json:"open_files,omitempty"`
	// ArtifactBytes caps the total size of the artifacts a run returns.
	ArtifactBytes int64 `json:"artifact_bytes,omitempty"`
}

// DefaultLimits returns the limits applied to every zero field of a
// request's Limits. Each call returns a value of its own: no importer can
// change the defaults of another.
func DefaultLimits() Limits { return defaultLimits }

// DefaultSessionLimits returns the limits applied to every zero field of
// a session's Limits (SessionRequest.Limits), whatever the transport (the
// CLI's `crucible session`, the HTTP API, MCP, the web UI's notebook).
// A session is for data work: loading a CSV into pandas, joining,
// plotting; a cell there takes seconds to a minute and the DataFrames take
// hundreds of MiB, which a stateless run's defaults (5 s, 256 MiB) would
// stop. So a cell may run 60 s (wall and CPU time), the session hold
// 2 GiB, and its working directory 1 GiB (a tmpfs: what is written there
// counts against the memory too); the other fields are DefaultLimits'.
// A server whose maxima are lower lowers these to them (DefaultsWithin).
// Each call returns a value of its own.
func DefaultSessionLimits() Limits { return defaultSessionLimits }

// MaxLimits returns the largest values a request may ask for. They guard
// the host against absurd requests; a deployment's policy may clamp
// further. Each call returns a value of its own.
func MaxLimits() Limits { return maxLimits }

// defaultLimits is what DefaultLimits returns.
var defaultLimits = Limits{
	WallTimeMS:    5_000,
	CPUTimeMS:     5_000,
	MemoryBytes:   256 * MiB,
	Processes:     64,
	OutputBytes:   1 * MiB,
	DiskBytes:     64 * MiB,
	OpenFiles:     256,
	ArtifactBytes: 16 * MiB,
}

// defaultSessionLimits is what DefaultSessionLimits returns.
var defaultSessionLimits = Limits{
	WallTimeMS:  60_000,
	CPUTimeMS:   60_000,
	MemoryBytes: 2 * GiB,
	DiskBytes:   1 * GiB,
}.Or(defaultLimits)

// maxLimits is what MaxLimits returns.
var maxLimits = Limits{
	WallTimeMS:    3_600_000,
	CPUTimeMS:     3_600_000,
	MemoryBytes:   64 * GiB,
	Processes:     4096,
	OutputBytes:   256 * MiB,
	DiskBytes:     16 * GiB,
	FileSizeBytes: 16 * GiB,
	OpenFiles:     65536,
	ArtifactBytes: 1 * GiB,
}

// minLimits are the smallest useful values: below them no interpreter can
// start, so a request asking for less is a mistake, not a policy.
var minLimits = Limits{
	WallTimeMS:    1,
	CPUTimeMS:     1,
	MemoryBytes:   8 * MiB,
	Processes:     1,
	OutputBytes:   1,
	DiskBytes:     64 * KiB,
	FileSizeBytes: 1,
	OpenFiles:     16,
	ArtifactBytes: 1,
}

// WallTime returns WallTimeMS as a time.Duration.
func (l Limits) WallTime() time.Duration { return time.Duration(l.WallTimeMS) * time.Millisecond }

// CPUTime returns CPUTimeMS as a time.Duration.
func (l Limits) CPUTime() time.Duration { return time.Duration(l.CPUTimeMS) * time.Millisecond }

// WithDefaults returns l with every zero field set from DefaultLimits
// (FileSizeBytes from DiskBytes).
func (l Limits) WithDefaults() Limits {
	l = l.Or(defaultLimits) // defaultLimits has no FileSizeBytes of its own
	if l.FileSizeBytes == 0 {
		l.FileSizeBytes = l.DiskBytes
	}
	return l
}

// WithSessionDefaults returns l with every zero field set from
// DefaultSessionLimits (FileSizeBytes from DiskBytes): the limits of a
// session.
func (l Limits) WithSessionDefaults() Limits {
	l = l.Or(defaultSessionLimits)
	if l.FileSizeBytes == 0 {
		l.FileSizeBytes = l.DiskBytes
	}
	return l
}

// limitField describes one field of Limits for validation.
type limitField struct {
	name string
	ptr  func(*Limits) *int64
	unit string
}

func (f limitField) get(l *Limits) int64 { return *f.ptr(l) }

var limitFields = []limitField{
	{"wall_time_ms", func(l *Limits) *int64 { return &l.WallTimeMS }, "ms"},
	{"cpu_time_ms", func(l *Limits) *int64 { return &l.CPUTimeMS }, "ms"},
	{"memory_bytes", func(l *Limits) *int64 { return &l.MemoryBytes }, "bytes"},
	{"processes", func(l *Limits) *int64 { return &l.Processes }, ""},
	{"output_bytes", func(l *Limits) *int64 { return &l.OutputBytes }, "bytes"},
	{"disk_bytes", func(l *Limits) *int64 { return &l.DiskBytes }, "bytes"},
	{"file_size_bytes", func(l *Limits) *int64 { return &l.FileSizeBytes }, "bytes"},
	{"open_files", func(l *Limits) *int64 { return &l.OpenFiles }, ""},
	{"artifact_bytes", func(l *Limits) *int64 { return &l.ArtifactBytes }, "bytes"},
}

// Validate checks l as sent by a caller: zero means default, otherwise each
// field must lie between the minimum and MaxLimits.
func (l Limits) Validate() error {
	for _, f := range limitFields {
		v := f.get(&l)
		if v == 0 {
			continue
		}
		lo, hi := f.get(&minLimits), f.get(&maxLimits)
		if v < 0 {
			return inputErrorf("limits."+f.name, "must not be negative (0 means the default), got %d", v)
		}
		if v < lo || v > hi {
			return inputErrorf("limits."+f.name, "must be between %s and %s, got %d", withUnit(lo, f.unit), withUnit(hi, f.unit), v)
		}
	}
	return nil
}

func withUnit(v int64, unit string) string {
	switch {
	case unit == "":
		return fmt.Sprint(v)
	case unit == "bytes" && v >= KiB:
		return fmt.Sprintf("%d bytes (%s)", v, binarySize(v))
	}
	return fmt.Sprintf("%d %s", v, unit)
}

// binarySize writes v in the largest binary unit that divides it, or with
// one decimal: "64 MiB", "1.5 GiB".
func binarySize(v int64) string {
	units := []struct {
		size int64
		name string
	}{{GiB, "GiB"}, {MiB, "MiB"}, {KiB, "KiB"}}
	for _, u := range units {
		if v >= u.size {
			if v%u.size == 0 {
				return fmt.Sprintf("%d %s", v/u.size, u.name)
			}
			return fmt.Sprintf("%.1f %s", float64(v)/float64(u.size), u.name)
		}
	}
	return fmt.Sprintf("%d bytes", v)
}

// Within reports the first field of l above the same field of maxima, a
// deployment's own maxima, as an *InputError naming "limits.FIELD"; zero
// fields of l (the defaults) are not checked: see DefaultsWithin.
func (l Limits) Within(maxima Limits) error {
	for _, f := range limitFields {
		if v, hi := f.get(&l), f.get(&maxima); v > hi {
			return inputErrorf("limits."+f.name, "must be at most %s on this server, got %d", withUnit(hi, f.unit), v)
		}
	}
	return nil
}

// DefaultsWithin returns l with each zero field whose default (a run's,
// DefaultLimits) is above the same field of maxima set to that maximum,
// so that a request that leaves a limit to the default never exceeds a
// deployment's maxima.
func (l Limits) DefaultsWithin(maxima Limits) Limits {
	return l.defaultsWithin(Limits{}.WithDefaults(), maxima)
}

// SessionDefaultsWithin is DefaultsWithin for a session's limits, whose
// defaults are DefaultSessionLimits.
func (l Limits) SessionDefaultsWithin(maxima Limits) Limits {
	return l.defaultsWithin(Limits{}.WithSessionDefaults(), maxima)
}

func (l Limits) defaultsWithin(d, maxima Limits) Limits {
	for _, f := range limitFields {
		if f.get(&l) == 0 && f.get(&d) > f.get(&maxima) {
			*f.ptr(&l) = f.get(&maxima)
		}
	}
	return l
}

// Or returns l with each zero field taken from d.
func (l Limits) Or(d Limits) Limits {
	for _, f := range limitFields {
		if f.get(&l) == 0 {
			*f.ptr(&l) = f.get(&d)
		}
	}
	return l
}
