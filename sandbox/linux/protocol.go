package linux

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
)

// The host and the sandbox's init talk over two pipes, never over the
// program's own stdio: the config pipe (host → init, fd 3 in init) carries an
// initConfig followed by the input files' bytes, and the event pipe (init →
// host, fd 4) carries initEvents as JSON lines.
const (
	configFD = 3
	eventFD  = 4
)

// maxConfigBytes bounds the config header init will read: the code is at
// most sandbox.MaxCodeBytes and the rest is small.
const maxConfigBytes = 16 << 20

// initConfig is everything the sandbox's init needs to build the sandbox and
// start the program.
type initConfig struct {
	// StageDir is a host directory init mounts its private staging tmpfs on;
	// the mount exists only in the sandbox's mount namespace.
	StageDir string `json:"stage_dir"`
	// Root lists what the new root filesystem is made of.
	Root []rootEntry `json:"root"`
	// MainPath and Code are the program file and its source.
	MainPath string `json:"main_path"`
	Code     string `json:"code"`
	// Argv and Env start the program; Dir is its working directory.
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
	// Files are the input files, whose bytes follow the header in order.
	Files []fileHeader `json:"files"`
	// UID and GID are the unprivileged identity the program runs as.
	UID int `json:"uid"`
	GID int `json:"gid"`
	// Hostname is the sandbox's host name.
	Hostname string `json:"hostname"`
	// DiskBytes sizes the writable tmpfs.
	DiskBytes int64 `json:"disk_bytes"`
	// CPUSeconds, FileSizeBytes and OpenFiles become rlimits.
	CPUSeconds    uint64 `json:"cpu_seconds"`
	FileSizeBytes uint64 `json:"file_size_bytes"`
	OpenFiles     uint64 `json:"open_files"`
}

// fileHeader describes one input file whose content follows on the pipe.
type fileHeader struct {
	Name       string `json:"name"`
	Size       int64  `json:"size"`
	Executable bool   `json:"executable"`
}

// writeConfig sends cfg, length-prefixed, followed by the files' contents.
func writeConfig(w io.Writer, cfg *initConfig, contents [][]byte) error {
	hdr, err := json.Marshal(cfg)
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
	for _, c := range contents {
		if _, err := w.Write(c); err != nil {
			return err
		}
	}
	return nil
}

// readConfig reads the header written by writeConfig; the file contents
// remain on r.
func readConfig(r io.Reader) (*initConfig, error) {
	var n [8]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, fmt.Errorf("read config length: %w", err)
	}
	size := binary.BigEndian.Uint64(n[:])
	if size > maxConfigBytes {
		return nil, fmt.Errorf("config of %d bytes exceeds %d", size, maxConfigBytes)
	}
	hdr := make([]byte, size)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cfg := new(initConfig)
	if err := json.Unmarshal(hdr, cfg); err != nil {
		return nil, fmt.Errorf("decode config: %w", err)
	}
	return cfg, nil
}

// The phases an initEvent reports.
const (
	phaseStarted = "started" // the program is running
	phaseExited  = "exited"  // the program ended; ExitCode or Signal say how
	phaseFailed  = "failed"  // the sandbox could not be built or started
)

// initEvent is one message from init to the host.
type initEvent struct {
	Phase    string `json:"phase"`
	ExitCode int    `json:"exit_code,omitempty"`
	Signal   int    `json:"signal,omitempty"`
	// Error says what failed, for phaseFailed.
	Error string `json:"error,omitempty"`
	// Missing is set when the failure is an interpreter absent from the
	// root filesystem.
	Missing bool `json:"missing,omitempty"`
}
