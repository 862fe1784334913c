package e2bapi

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// The messages of E2B's envd services process.Process and
// filesystem.Filesystem, written from what E2B's SDK sends and reads. Their
// JSON follows protobuf's JSON mapping (see envdCodec): a oneof is a
// struct of pointers of which one is set; 64-bit integers are strings.

// processConfig is what a process runs: cmd with args, its extra
// environment and its working directory.
type processConfig struct {
	Cmd  string            `json:"cmd"`
	Args []string          `json:"args,omitempty"`
	Envs map[string]string `json:"envs,omitempty"`
	Cwd  *string           `json:"cwd,omitempty"`
}

// ptyOptions asks for a pseudo-terminal (not supported here).
type ptyOptions struct {
	Size *struct {
		Cols uint32 `json:"cols"`
		Rows uint32 `json:"rows"`
	} `json:"size,omitempty"`
}

// startRequest starts a process (process.Process/Start).
type startRequest struct {
	Process *processConfig `json:"process"`
	Pty     *ptyOptions    `json:"pty,omitempty"`
	Tag     *string        `json:"tag,omitempty"`
	Stdin   *bool          `json:"stdin,omitempty"`
}

// processEvent is one event of a process's stream: exactly one field set.
type processEvent struct {
	Start     *startEvent `json:"start,omitempty"`
	Data      *dataEvent  `json:"data,omitempty"`
	End       *endEvent   `json:"end,omitempty"`
	Keepalive *struct{}   `json:"keepalive,omitempty"`
}

// startEvent names the process started.
type startEvent struct {
	Pid uint32 `json:"pid"`
}

// dataEvent is a chunk of output: one of stdout or stderr (base64 on the
// wire, as protobuf's bytes are).
type dataEvent struct {
	Stdout []byte `json:"stdout,omitempty"`
	Stderr []byte `json:"stderr,omitempty"`
}

// endEvent says how the process ended. ExitCode is -1 when it did not
// exit on its own (Exited false); Error is what the SDK's
// CommandExitError says.
type endEvent struct {
	ExitCode int32   `json:"exitCode"`
	Exited   bool    `json:"exited"`
	Status   string  `json:"status"`
	Error    *string `json:"error,omitempty"`
}

// startResponse and connectResponse carry one event each.
type startResponse struct {
	Event processEvent `json:"event"`
}

type connectResponse struct {
	Event processEvent `json:"event"`
}

// processSelector names a process by pid or by tag.
type processSelector struct {
	Pid *jsonUint32 `json:"pid,omitempty"`
	Tag *string     `json:"tag,omitempty"`
}

// connectRequest re-attaches to a process's events.
type connectRequest struct {
	Process *processSelector `json:"process"`
}

// processListRequest lists the running processes.
type processListRequest struct{}

// processInfo describes a running process.
type processInfo struct {
	Config processConfig `json:"config"`
	Pid    uint32        `json:"pid"`
	Tag    *string       `json:"tag,omitempty"`
}

// processListResponse holds the running processes.
type processListResponse struct {
	Processes []processInfo `json:"processes"`
}

// sendSignalRequest signals a process.
type sendSignalRequest struct {
	Process *processSelector `json:"process"`
	Signal  envdSignal       `json:"signal"`
}

// sendSignalResponse is empty.
type sendSignalResponse struct{}

// The requests of the stdin and pty RPCs, refused here: they are decoded
// only to be answered.
type (
	sendInputRequest   struct{}
	sendInputResponse  struct{}
	closeStdinRequest  struct{}
	closeStdinResponse struct{}
	updateRequest      struct{}
	updateResponse     struct{}
	streamInputRequest struct{}
	streamInputResp    struct{}
)

// envdSignal is process.Signal: by name on the wire, also read by number.
type envdSignal int32

// The signals process.Signal names.
const (
	signalUnspecified envdSignal = 0
	signalSIGKILL     envdSignal = 9
	signalSIGTERM     envdSignal = 15
)

var signalNames = map[envdSignal]string{signalUnspecified: "SIGNAL_UNSPECIFIED", signalSIGKILL: "SIGNAL_SIGKILL", signalSIGTERM: "SIGNAL_SIGTERM"}

// MarshalJSON writes the signal's name.
func (s envdSignal) MarshalJSON() ([]byte, error) {
	if n, ok := signalNames[s]; ok {
		return json.Marshal(n)
	}
	return json.Marshal(int32(s))
}

// UnmarshalJSON reads a signal by name or by number.
func (s *envdSignal) UnmarshalJSON(b []byte) error {
	var name string
	if json.Unmarshal(b, &name) == nil {
		for v, n := range signalNames {
			if n == name {
				*s = v
				return nil
			}
		}
		return fmt.Errorf("signal: must be SIGNAL_SIGKILL or SIGNAL_SIGTERM, got %q", name)
	}
	var n int32
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("signal: must be a name or a number, got %s", b)
	}
	*s = envdSignal(n)
	return nil
}

// jsonUint32 is a uint32 that protobuf's JSON may write as a number or a
// string.
type jsonUint32 uint32

// UnmarshalJSON reads a number or a decimal string.
func (u *jsonUint32) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		b = []byte(s)
	}
	n, err := strconv.ParseUint(string(b), 10, 32)
	if err != nil {
		return fmt.Errorf("must be a 32-bit unsigned integer, got %s", b)
	}
	*u = jsonUint32(n)
	return nil
}

// envdFileType is filesystem.FileType, by name on the wire.
type envdFileType string

// The file types E2B's SDK knows; a session lists regular files and
// directories only.
const (
	envdFileTypeFile envdFileType = "FILE_TYPE_FILE"
	envdFileTypeDir  envdFileType = "FILE_TYPE_DIRECTORY"
)

// envdEntry describes a file or a directory. Mode, permissions, owner and
// group are left out (protobuf's JSON omits empty fields): a session's
// file listing does not carry them, and they are not made up.
type envdEntry struct {
	Name         string       `json:"name"`
	Type         envdFileType `json:"type"`
	Path         string       `json:"path"`
	Size         int64        `json:"size,string"`
	ModifiedTime *time.Time   `json:"modifiedTime,omitempty"`
}

// The requests and responses of filesystem.Filesystem's RPCs.
type (
	statRequest struct {
		Path string `json:"path"`
	}
	statResponse struct {
		Entry *envdEntry `json:"entry"`
	}
	listDirRequest struct {
		Path  string `json:"path"`
		Depth uint32 `json:"depth"`
	}
	listDirResponse struct {
		Entries []envdEntry `json:"entries"`
	}
	makeDirRequest struct {
		Path string `json:"path"`
	}
	makeDirResponse struct {
		Entry *envdEntry `json:"entry"`
	}
	moveRequest struct {
		Source      string `json:"source"`
		Destination string `json:"destination"`
	}
	moveResponse struct {
		Entry *envdEntry `json:"entry"`
	}
	removeRequest struct {
		Path string `json:"path"`
	}
	removeResponse struct{}
	watchRequest   struct{}
	watchResponse  struct{}
)
