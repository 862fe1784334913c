package sandbox

import (
	"context"
	"regexp"
	"strings"
	"time"
)

// SessionRequest creates a session: a live interpreter in its own sandbox
// whose variables and files persist from one cell to the next.
type SessionRequest struct {
	// Language selects the kernel; sessions exist for "python" (or an
	// alias of it, which the service resolves, as it takes DefaultLanguage,
	// Python, for an empty one).
	Language Language `json:"language,omitempty"`
	// Image names the root filesystem the session runs in, as
	// Request.Image does.
	Image string `json:"image,omitempty"`
	// Files are placed in the working directory before the first cell.
	Files []File `json:"files,omitempty"`
	// Limits apply as for a run: memory, processes, disk and open files to
	// the whole session; wall time, CPU time and output to each cell.
	// Zero fields take DefaultSessionLimits, not a run's defaults.
	Limits Limits `json:"limits,omitempty"`
	// Env is added to the kernel's environment.
	Env map[string]string `json:"env,omitempty"`
	// Policy asks for the static code policy every cell is checked
	// against, as Request.Policy does for a run.
	Policy *Policy `json:"policy,omitempty"`
}

// Validate checks the request like Request.Validate does, the files
// against the session's working directory (DefaultSessionLimits when
// Limits leaves its size zero).
func (r *SessionRequest) Validate() error {
	if r.Language != Python {
		return inputErrorf("language", "must be python (or %s): sessions exist for python only, got %q",
			strings.Join(languageAliases[Python], ", "), r.Language)
	}
	if err := r.Limits.Validate(); err != nil {
		return err
	}
	if err := validateFiles(r.Files, r.Limits.WithSessionDefaults().DiskBytes); err != nil {
		return err
	}
	run := Request{Language: r.Language, Image: r.Image, Env: r.Env, Policy: r.Policy}
	return run.validateRest()
}

// Cell is one piece of code run in a session.
type Cell struct {
	// Code is the cell's source.
	Code string `json:"code"`
	// TimeoutMS overrides the session's wall-time limit for this cell.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// Context names the namespace the cell runs in: cells of one context
	// share their variables, and see none of another context's; all share
	// the session's files, interpreter and limits (E2B's code contexts).
	// "" is the session's default namespace. A named context is made,
	// empty, by its first cell; a session holds at most MaxCellContexts
	// of them besides the default (a cell asking for one more fails, the
	// session goes on). A context is no security boundary: a cell can
	// reach every namespace of its interpreter.
	Context string `json:"context,omitempty"`
	// ResetContext replaces the context's namespace by an empty one
	// before the cell runs (E2B's context restart); with empty code it
	// only resets. Resetting a named context frees its place among the
	// MaxCellContexts until a cell uses it again.
	ResetContext bool `json:"reset_context,omitempty"`
	// OnOutput, when set, receives the cell's output while it runs.
	OnOutput OutputFunc `json:"-"`
	// Rules, set by the service from the session's policy, are checked
	// against the cell in the kernel before it runs (see Request.Rules).
	Rules *CodeRules `json:"-"`
	// Unchecked marks the platform's own code, such as an analyst's
	// helpers, which no code policy checks: the policy is for the code of
	// users and models. Only a Go caller can set it.
	Unchecked bool `json:"-"`
}

// Validate checks a cell like Request.Validate checks a run's code (size,
// no NUL bytes, valid UTF-8) and its timeout against the maximum.
func (c *Cell) Validate() error {
	if err := validateCode(c.Code); err != nil {
		return err
	}
	if c.TimeoutMS < 0 || c.TimeoutMS > maxLimits.WallTimeMS {
		return inputErrorf("timeout_ms", "must be between 0 (the session's limit) and %d, got %d", maxLimits.WallTimeMS, c.TimeoutMS)
	}
	if c.Context != "" && !contextNameRE.MatchString(c.Context) {
		return inputErrorf("context", "must be empty (the default context) or 1 to 64 letters, digits, '_' and '-', starting with a letter or digit, got %q", c.Context)
	}
	return nil
}

// MaxCellContexts is how many named contexts (Cell.Context) a session
// holds at most, besides its default one. The kernel enforces it.
const MaxCellContexts = 64

// contextNameRE is what a Cell.Context name may be: short, printable,
// safe in a URL path and a log line.
var contextNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// FileInfo describes a file in a session's working directory.
type FileInfo struct {
	// Name is the path relative to the working directory.
	Name string `json:"name"`
	// Size is the length in bytes.
	Size int64 `json:"size"`
	// Dir marks a directory.
	Dir bool `json:"dir,omitempty"`
	// ModTime is the last modification.
	ModTime time.Time `json:"mod_time"`
}

// Session is a live interpreter in a sandbox. Cells run one at a time; a
// cell that outlives its wall-time limit is interrupted (KeyboardInterrupt)
// and the session kept, or, if it does not yield, the session is killed.
// A cell that runs the interpreter out of memory ends as StatusMemoryLimit
// with Result.Restarted set: the session goes on in a fresh interpreter
// (every variable lost, the files kept), where the runtime can start one.
// File names are relative to the working directory: "..", absolute paths
// and symbolic links leading out of it are refused.
//
// Between cells, what a cell left behind (a thread, a child process) uses
// no CPU that no cell is billed for: the native runtime bills it to the
// next cell and stops the session's processes shortly after a cell until
// the next one. What a cell wrote before it ended never
// shows in a later cell's output, and a reply a cell forges on the
// kernel's channel never becomes a later cell's result: the session is
// killed instead. A cell can always make its own Result say anything,
// and change how the interpreter runs later cells (it is one interpreter).
type Session interface {
	// ID names the session.
	ID() string
	// Exec runs a cell. The Result's Value and ValueHTML show the last
	// expression; Artifacts hold the figures the cell left open (as PNG)
	// and the files it created or changed.
	Exec(ctx context.Context, cell Cell) (Result, error)
	// WriteFile creates or replaces a file. A read-only input file
	// (File.ReadOnly), or a file in a directory holding one, cannot be
	// written: the error is an *InputError.
	WriteFile(ctx context.Context, name string, content []byte) error
	// ReadFile returns a file's content.
	ReadFile(ctx context.Context, name string) ([]byte, error)
	// ListFiles lists the working directory, recursively.
	ListFiles(ctx context.Context) ([]FileInfo, error)
	// Close ends the session and destroys its sandbox. A cell running
	// meanwhile returns at once with StatusKilled and exit code -1.
	Close() error
}

// SessionRuntime starts sessions.
type SessionRuntime interface {
	NewSession(ctx context.Context, req SessionRequest) (Session, error)
}

// CellNotStarted is the result of a cell whose context was done before it
// could start (it waited its turn behind another cell): status killed,
// nothing run, the session kept. A runtime answers it rather than send
// the kernel a cell to interrupt at once: an interrupt that reaches the
// kernel before it has begun the cell would be lost.
func CellNotStarted(err error) Result {
	return Result{Language: Python, Status: StatusKilled, ExitCode: -1, Stdout: Data{}, Stderr: Data{},
		Reason: "cell cancelled before it started: " + err.Error()}
}
