package sandboxinit

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
)

// The host and the sandbox's init talk over two pipes, never over the
// program's own stdio: the config pipe (host → init, fd 3 in init) carries a
// BaseConfig, later a RunConfig followed by the input files' bytes; the
// event pipe (init → host, fd 4) carries initEvents as JSON lines.
//
// The split lets a sandbox be built ahead of time: with the BaseConfig,
// init builds everything that does not depend on the request, reports
// PhaseReady and waits; the RunConfig then only adds the code and files,
// switches root, locks the sandbox down and starts the program.
const (
	ConfigFD = 3
	EventFD  = 4
	// KernelInFD and KernelOutFD are the private channel of a session's
	// kernel (host → kernel, kernel → host). Init hands them to the program
	// as fds 3 and 4 when RunConfig.Channel is set, and closes them
	// otherwise: a plain run never sees them.
	KernelInFD  = 5
	KernelOutFD = 6
)

// CodeDir is the sandbox's directory for the program file.
const CodeDir = "/code"

// codeTmpfsOptions sizes CodeDir's tmpfs for the largest program (4 MiB,
// sandbox.MaxCodeBytes) and a kernel beside it.
const codeTmpfsOptions = "size=8m,mode=0755"

// maxConfigBytes bounds a config message init will read: the code is at
// most sandbox.MaxCodeBytes and the rest is small.
const maxConfigBytes = 16 << 20

// BaseConfig is what every sandbox of a Runtime shares.
type BaseConfig struct {
	// StageDir is a host directory init mounts its private staging tmpfs on;
	// the mount exists only in the sandbox's mount namespace.
	StageDir string `json:"stage_dir"`
	// Root lists what the new root filesystem is made of.
	Root []RootEntry `json:"root"`
	// UID and GID are the unprivileged identity the program runs as.
	UID int `json:"uid"`
	GID int `json:"gid"`
	// Hostname is the sandbox's host name.
	Hostname string `json:"hostname"`
	// Image is the host directory of the root filesystem image that Root's
	// bind sources lie in, or "" for a root made of the host's own system
	// directories. Init binds from an overlay of it, so that no mount in
	// the sandbox names the host path (see hideImagePath).
	Image string `json:"image,omitempty"`
	// TmpSeed is a directory of the root filesystem whose contents are
	// copied into the sandbox's /tmp.
	TmpSeed string `json:"tmp_seed,omitempty"`
	// Seccomp holds the assembled seccomp filters, loaded in order just
	// before the program starts. The host assembles them once, so that the
	// sandbox side needs no syscall tables.
	Seccomp []SeccompFilter `json:"seccomp"`
}

// RootEntry is one piece of the sandbox's root filesystem, which init builds
// on an empty tmpfs: a read-only bind mount of a host path, a symbolic link,
// or a small file written from Content.
type RootEntry struct {
	// Target is the absolute path inside the sandbox.
	Target string `json:"target"`
	// Source is the host path to bind read-only, for a bind entry.
	Source string `json:"source,omitempty"`
	// Link is the link text, for a symlink entry.
	Link string `json:"link,omitempty"`
	// Content is the file's content, for a file entry.
	Content string `json:"content,omitempty"`
	// IsFile marks a bind entry whose source is a file, not a directory.
	IsFile bool `json:"is_file,omitempty"`
}

// RunConfig is what one request adds.
type RunConfig struct {
	// MainPath and Code are the program file and its source.
	MainPath string `json:"main_path"`
	Code     string `json:"code"`
	// Argv and Env start the program; Dir is its working directory.
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
	// Files are the input files, whose bytes follow the message in order.
	Files []FileHeader `json:"files"`
	// DiskBytes sizes the writable tmpfs.
	DiskBytes int64 `json:"disk_bytes"`
	// MemoryBytes is the run's memory limit, which the sandbox's
	// /proc/meminfo shows as the machine's memory.
	MemoryBytes int64 `json:"memory_bytes"`
	// Channel gives the program the kernel channel as fds 3 and 4.
	Channel bool `json:"channel,omitempty"`
	// Restartable makes the program a session's kernel that init starts
	// again, with fresh pipes, when the host asks (Restart) after it
	// exited; init then keeps the config pipe open (restart.go).
	Restartable bool `json:"restartable,omitempty"`
	// ZygoteUID, if set, makes the program a zygote (zygote.go), which
	// takes real and saved ids ZygoteUID and effective ids the sandbox
	// user's; init then keeps serving Reset requests on the config pipe.
	ZygoteUID int `json:"zygote_uid,omitempty"`
	// CPUSeconds, FileSizeBytes, OpenFiles and Processes become rlimits;
	// CPUSeconds 0 sets no CPU rlimit (a session, whose CPU is limited per
	// cell), Processes 0 no RLIMIT_NPROC.
	CPUSeconds    uint64 `json:"cpu_seconds"`
	FileSizeBytes uint64 `json:"file_size_bytes"`
	OpenFiles     uint64 `json:"open_files"`
	Processes     uint64 `json:"processes,omitempty"`
}

// FileHeader describes one input file whose content follows on the pipe.
type FileHeader struct {
	Name       string `json:"name"`
	Size       int64  `json:"size"`
	Executable bool   `json:"executable"`
	// ReadOnly makes the file, and the directories holding it, root's and
	// immutable (readonly.go).
	ReadOnly bool `json:"read_only,omitempty"`
}

// WriteMessage sends msg, length-prefixed, followed by trailing bytes
// (the input files' contents).
func WriteMessage(w io.Writer, msg any, trailing [][]byte) error {
	hdr, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(hdr)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	for _, c := range trailing {
		if _, err := w.Write(c); err != nil {
			return err
		}
	}
	return nil
}

// ReadMessage reads a message written by WriteMessage into msg; trailing
// bytes remain on r.
func ReadMessage(r io.Reader, msg any) error {
	var n [8]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return fmt.Errorf("read config length: %w", err)
	}
	size := binary.BigEndian.Uint64(n[:])
	if size > maxConfigBytes {
		return fmt.Errorf("config of %d bytes exceeds %d", size, maxConfigBytes)
	}
	hdr := make([]byte, size)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return fmt.Errorf("read config: %w", err)
	}
	if err := json.Unmarshal(hdr, msg); err != nil {
		return fmt.Errorf("decode config: %w", err)
	}
	return nil
}

// The phases an Event reports.
const (
	PhaseReady   = "ready"   // the sandbox is built and waits for a request
	PhaseStarted = "started" // the program is running
	PhaseExited  = "exited"  // the program ended; ExitCode or Signal say how
	PhaseFailed  = "failed"  // the sandbox could not be built or started
	PhasePipes   = "pipes"   // a restart's pipes are open: Fds lists the host's ends
)

// Event is one message from init to the host.
type Event struct {
	Phase    string `json:"phase"`
	ExitCode int    `json:"exit_code,omitempty"`
	Signal   int    `json:"signal,omitempty"`
	// Error says what failed, for PhaseFailed.
	Error string `json:"error,omitempty"`
	// Missing is set when the failure is an interpreter absent from the
	// root filesystem.
	Missing bool `json:"missing,omitempty"`
	// Fds, for PhasePipes, are init's descriptors of the host's ends of
	// the restarted program's pipes, in order: stdin (write end), stdout,
	// stderr (read ends), the kernel's requests (write end) and replies
	// (read end).
	Fds []int `json:"fds,omitempty"`
}
