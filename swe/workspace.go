package swe

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// repoDir is the repository's root, relative to the session's working
// directory (/work/repo in the sandbox).
const repoDir = "repo"

// Where the platform's files live in a session's working directory:
// inputDir holds the read-only inputs (the archive, a diff to verify), a
// directory of their own so that nothing else becomes immutable with
// them; outDir the answers of the platform's cells and the diff taken.
const (
	inputDir    = ".swe-input"
	archiveName = inputDir + "/repo.archive"
	diffName    = inputDir + "/change.diff"
	outDir      = ".swe-out"
	answerName  = outDir + "/answer.json"
	diffOutName = outDir + "/diff.patch"
	// junitPath and outputPath are outside the repository and the working
	// directory (in /tmp, which the sandbox keeps per session).
	junitPath  = "/tmp/.swe/junit.xml"
	outputPath = "/tmp/.swe/output.txt"
	// cellContext is the namespace the platform's cells run in, apart
	// from the one the agent's own cells use.
	cellContext = "crucible-swe"
)

// maxDiffBytes caps a change, taken or verified.
const maxDiffBytes = 4 << 20

// defaultTestCommand runs pytest quietly, writing no cache into the
// repository (which would show in the diff).
const defaultTestCommand = "python3 -m pytest -q -p no:cacheprovider"

// cellSlack is how much longer than its command a platform cell may run
// (git, reading the report) before the session interrupts it; openTime
// how long unpacking a repository (up to MaxRepoBytes, compressed) and
// recording its baseline may take.
const (
	cellSlack = 60 * time.Second
	openTime  = 5 * time.Minute
)

// workspaceCode is the platform's side of a workspace, run in the
// sandbox: each cell is this code and a call of main with one JSON
// document, embedded as a string literal and decoded with json.loads,
// never spliced into the code.
//
//go:embed workspace.py
var workspaceCode string

// workspace is a session holding a repository at /work/repo, unpacked in
// the sandbox from the input's bytes, with the baseline its diff is taken
// against.
type workspace struct {
	sess sandbox.Session
	cfg  Config
}

// sessionRequest is the session of a workspace or a verification: the
// configured image and limits and the inputs, read-only in a directory of
// their own. It sets no environment: a variable the interpreter reads at
// its start would keep the runtime from serving a warm session (the test
// runs get theirs from the cell).
func sessionRequest(cfg Config, files []sandbox.File) sandbox.SessionRequest {
	for i := range files {
		files[i].ReadOnly = true
	}
	return sandbox.SessionRequest{Language: sandbox.Python, Image: cfg.Image, Limits: cfg.SessionLimits, Files: files}
}

// openWorkspace opens a session for the repository: the archive is placed
// read-only, a platform cell unpacks it to /work/repo inside the sandbox
// (the host never reads its members: a hostile archive is refused there,
// an *sandbox.InputError naming repo.archive, and bounded by the session's
// disk and time limits) and records the baseline. The caller closes it.
func openWorkspace(ctx context.Context, cfg Config, repo Repo) (*workspace, error) {
	if err := validateRepo(repo); err != nil {
		return nil, err
	}
	sess, err := cfg.Sandbox.NewSession(ctx, sessionRequest(cfg, []sandbox.File{{Name: archiveName, Content: sandbox.Data(repo.Archive)}}))
	if err != nil {
		return nil, fmt.Errorf("open the workspace's session: %w", err)
	}
	w := &workspace{sess: sess, cfg: cfg}
	var ans struct{}
	if err := cellCall(ctx, sess, map[string]any{"op": "open", "format": repoFormat(repo), "archive": "/work/" + archiveName}, openTime, &ans); err != nil {
		_ = sess.Close()
		return nil, err
	}
	return w, nil
}

// diff is the change of the working tree against the input, as git's
// unified diff (paths a/ and b/ from the repository's root; new, deleted
// and binary files, links and mode changes included; a rename as a
// deletion and an addition, which patch applies as well as git). Bytecode,
// pytest's cache and new files the repository's own .gitignore ignores
// are left out (a file of the input is always in, ignored or not). Past
// maxDiffBytes it fails, saying so.
func (w *workspace) diff(ctx context.Context) (string, error) {
	var ans struct {
		Size int64 `json:"size"`
	}
	if err := cellCall(ctx, w.sess, map[string]any{"op": "diff", "out": "/work/" + diffOutName, "limit": maxDiffBytes}, cellSlack, &ans); err != nil {
		return "", fmt.Errorf("take the diff: %w", err)
	}
	b, err := w.sess.ReadFile(ctx, diffOutName)
	if err != nil {
		return "", fmt.Errorf("read the diff: %w", err)
	}
	if int64(len(b)) != ans.Size {
		return "", fmt.Errorf("read the diff: %d bytes, the cell wrote %d", len(b), ans.Size)
	}
	return string(b), nil
}

// runTests runs command ("" is the default, pytest) in the workspace's
// own session, the working tree as the agent left it, for at most
// timeout (the whole process group is killed then).
func (w *workspace) runTests(ctx context.Context, command string, timeout time.Duration) (*TestReport, error) {
	spec := testSpec(command, timeout)
	spec["op"] = "test"
	var ans testAnswer
	start := time.Now()
	if err := cellCall(ctx, w.sess, spec, timeout+cellSlack, &ans); err != nil {
		return nil, fmt.Errorf("run the tests: %w", err)
	}
	return ans.report(spec["command"].(string), time.Since(start)), nil
}

// close ends the workspace's session.
func (w *workspace) close() error { return w.sess.Close() }

// testSpec is the part of a cell's document that runs the tests: the
// command ("" the default) for at most timeout (0 the default), cut so
// that the time to unpack a repository still fits beside it in a cell's
// longest wall time (the command is then killed, and answered, before the
// session would interrupt the cell).
func testSpec(command string, timeout time.Duration) map[string]any {
	if strings.TrimSpace(command) == "" {
		command = defaultTestCommand
	}
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	if longest := time.Duration(sandbox.MaxLimits().WallTimeMS)*time.Millisecond - openTime; timeout > longest {
		timeout = longest
	}
	return map[string]any{"command": command, "timeout": timeout.Seconds(), "junit": junitPath, "output": outputPath}
}

// cellCall runs one platform cell (main(spec)) in sess, in the platform's
// own namespace, unchecked by the code policy (it is the platform's code,
// not the model's), for at most timeout, and decodes its answer into out.
// An archive the cell refuses is an *sandbox.InputError naming
// repo.archive; a cell that fails, or ends without an answer, is an error
// saying how it ended.
func cellCall(ctx context.Context, sess sandbox.Session, spec map[string]any, timeout time.Duration, out any) error {
	spec["answer"] = "/work/" + answerName
	doc, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	lit, _ := json.Marshal(string(doc)) // a JSON string literal is a Python one
	ms := timeout.Milliseconds()
	if max := sandbox.MaxLimits().WallTimeMS; ms > max {
		ms = max
	}
	res, err := sess.Exec(ctx, sandbox.Cell{Code: workspaceCode + "\nmain(" + string(lit) + ")\n", TimeoutMS: ms, Context: cellContext, Unchecked: true})
	if err != nil {
		return err
	}
	b, rerr := sess.ReadFile(ctx, answerName)
	if res.Status != sandbox.StatusOK || rerr != nil {
		why := res.Reason
		if res.Error != nil {
			why = res.Error.Type + ": " + res.Error.Message
		}
		return fmt.Errorf("the platform's cell ended %s (%s) without an answer: %s", res.Status, why, clipTail(string(res.Stderr), 2000))
	}
	var ans struct {
		Refused string `json:"refused"`
		Error   string `json:"error"`
	}
	if err := json.Unmarshal(b, &ans); err != nil {
		return fmt.Errorf("the platform's cell answered %d bytes that are not its JSON: %w", len(b), err)
	}
	if ans.Refused != "" {
		return &sandbox.InputError{Field: "repo.archive", Rule: "must unpack to a repository: " + ans.Refused}
	}
	if ans.Error != "" {
		return errors.New(ans.Error)
	}
	return json.Unmarshal(b, out)
}

// clipTail is the last n bytes of s.
func clipTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
