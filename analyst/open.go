package analyst

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"path"
	"sync"

	"github.com/crucible-sandbox/crucible/sandbox"
)

//go:embed profile.py
var profilerSource string

// Analysis is a session in which datasets are loaded, and their profile.
type Analysis struct {
	// Session is the analysis's interpreter: its DataFrames live there,
	// under the names Frames give.
	Session sandbox.Session
	// Frames are the DataFrames the datasets were loaded into.
	Frames []Frame
	// Profile is their profile.
	Profile *Profile

	// The state of the conversation (ask.go): one question at a time.
	askOnce       sync.Once
	asking        chan struct{} // holds a token while a question is answered
	helpersLoaded bool
	convMu        sync.Mutex // guards conversation
	conversation  []*Answer
}

// Close ends the analysis's session.
func (a *Analysis) Close() error { return a.Session.Close() }

// Open starts an analysis: a session of rt made from req (its Files,
// Limits and Env kept; Language set to Python), with each dataset placed
// read-only as data/<name>; then it loads every dataset into its
// DataFrame and profiles them, in one cell. Fields of req.Limits left
// zero are filled by SessionLimits, within sandbox.MaxLimits().
//
// Datasets the analysis cannot hold (none, more than MaxDatasets, a bad
// or repeated name, a file over MaxDatasetBytes, a workbook with over
// MaxSheets sheets), a file name clashing with req.Files, and datasets
// too large to profile within the limits, and a session that cannot
// import the profiler's modules (loadModules), are refused with an
// *sandbox.InputError; a file that cannot be read is not an error, its
// Table says why. Anything else that fails is a *sandbox.PlatformError
// (or the runtime's own error for the session). On error no session is
// left open.
func Open(ctx context.Context, rt sandbox.SessionRuntime, req sandbox.SessionRequest, datasets []Dataset) (*Analysis, error) {
	frames, err := Frames(datasets)
	if err != nil {
		return nil, err
	}
	req.Language = sandbox.Python
	req.Files = append(req.Files[:len(req.Files):len(req.Files)], datasetFiles(datasets)...)
	req.Limits = SessionLimits(req.Limits, datasets, sandbox.MaxLimits())
	if err := req.Validate(); err != nil {
		return nil, err
	}
	sess, err := rt.NewSession(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := loadModules(ctx, sess); err != nil {
		_ = sess.Close()
		return nil, err
	}
	p, err := profile(ctx, sess, frames)
	if err != nil {
		_ = sess.Close()
		return nil, err
	}
	return &Analysis{Session: sess, Frames: frames, Profile: p}, nil
}

// datasetFiles places datasets read-only under DataDir.
func datasetFiles(datasets []Dataset) []sandbox.File {
	files := make([]sandbox.File, len(datasets))
	for i, d := range datasets {
		files[i] = sandbox.File{Name: path.Join(DataDir, d.Name), Content: d.Content, ReadOnly: true}
	}
	return files
}

// profile loads frames in sess and returns their profile.
func profile(ctx context.Context, sess sandbox.Session, frames []Frame) (*Profile, error) {
	code, err := profileCell(frames)
	if err != nil {
		return nil, &sandbox.PlatformError{Op: "build the profile cell", Err: err}
	}
	res, err := sess.Exec(ctx, sandbox.Cell{Code: code, Unchecked: true})
	if err != nil {
		return nil, err
	}
	switch res.Status {
	case sandbox.StatusOK:
	case sandbox.StatusTimeout, sandbox.StatusCPULimit, sandbox.StatusMemoryLimit, sandbox.StatusOutputLimit:
		return nil, &sandbox.InputError{Field: "datasets", Rule: "must load and profile within the session's limits: " + res.Reason}
	default:
		return nil, &sandbox.PlatformError{Op: "profile datasets", Err: fmt.Errorf("the profiler ended %s: %s%s", res.Status, res.Reason, errorText(res))}
	}
	p, err := decodeProfile(res.Stdout, frames)
	if err != nil {
		return nil, &sandbox.PlatformError{Op: "read the profile", Err: err}
	}
	return p, nil
}

// errorText is a failed cell's exception, if it has one.
func errorText(res sandbox.Result) string {
	if res.Error == nil {
		return ""
	}
	return fmt.Sprintf(" (%s: %s)", res.Error.Type, res.Error.Message)
}

// profileCell is the cell that runs the profiler over frames: it loads
// profile.py as a module of its own, so that its helpers stay out of the
// session's namespace (with textvalues.py to import: moduleCode),
// and prints the profile.
func profileCell(frames []Frame) (string, error) {
	cfg := struct {
		Frames []Frame `json:"frames"`
		DF     string  `json:"df,omitempty"`
	}{Frames: frames}
	if len(frames) == 1 {
		cfg.DF = frames[0].Name
	}
	config, err := json.Marshal(cfg)
	if err != nil {
		return "", err
	}
	body, err := moduleCode("crucible_profile", profilerSource)
	if err != nil {
		return "", err
	}
	quoted, err := json.Marshal(string(config)) // a JSON string is a Python string literal
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(`def _crucible_profile():
%s
    import json
    print(m.main(json.loads(%s), globals()))
_crucible_profile()
del _crucible_profile
`, body, quoted), nil
}
