package swe

// TEMPORARY: a minimal stand-in for helper A's workspace and verification
// (branch i30-swe-workspace), so that the loop compiles and runs until A's
// branch is merged; deleted by the merge.

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

const repoDir = "repo"

func (r Repo) validate() error {
	if len(r.Archive) == 0 {
		return &sandbox.InputError{Field: "repo.archive", Rule: "is required"}
	}
	return nil
}

func (t Task) validate() error {
	if err := t.Repo.validate(); err != nil {
		return err
	}
	if strings.TrimSpace(t.Prompt) == "" {
		return &sandbox.InputError{Field: "task", Rule: "is required"}
	}
	return nil
}

func testFile(id string) string {
	file, _, _ := strings.Cut(id, "::")
	return file
}

type workspace struct{ sess sandbox.Session }

func untarFiles(archive []byte) ([]sandbox.File, error) {
	var rd io.Reader = bytes.NewReader(archive)
	if bytes.HasPrefix(archive, []byte{0x1f, 0x8b}) {
		z, err := gzip.NewReader(rd)
		if err != nil {
			return nil, err
		}
		rd = z
	}
	tr := tar.NewReader(rd)
	var files []sandbox.File
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, _ := io.ReadAll(tr)
		files = append(files, sandbox.File{Name: repoDir + "/" + strings.TrimPrefix(h.Name, "./"), Content: b, Executable: h.Mode&0o111 != 0})
	}
}

func newSession(ctx context.Context, cfg Config, repo Repo) (sandbox.Session, error) {
	files, err := untarFiles(repo.Archive)
	if err != nil {
		return nil, err
	}
	s, err := cfg.Sandbox.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python, Image: cfg.Image, Files: files, Limits: cfg.SessionLimits})
	if err != nil {
		return nil, err
	}
	if _, err := sh(ctx, s, "cd /work/repo && git init -q && git add -A && git -c user.email=a@b -c user.name=a commit -qm base", time.Minute); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func sh(ctx context.Context, s sandbox.Session, cmd string, timeout time.Duration) (sandbox.Result, error) {
	code := fmt.Sprintf("import subprocess\n_r = subprocess.run(['bash','-c',%q], capture_output=True)\nprint(_r.stdout.decode(), end='')\nprint(_r.stderr.decode(), end='')\n_r.returncode", cmd)
	return s.Exec(ctx, sandbox.Cell{Code: code, TimeoutMS: timeout.Milliseconds()})
}

func openWorkspace(ctx context.Context, cfg Config, repo Repo) (*workspace, error) {
	s, err := newSession(ctx, cfg, repo)
	if err != nil {
		return nil, err
	}
	return &workspace{sess: s}, nil
}

func (w *workspace) diff(ctx context.Context) (string, error) {
	res, err := sh(ctx, w.sess, "cd /work/repo && git add -A && git diff --cached --binary", time.Minute)
	return string(res.Stdout), err
}

func (w *workspace) runTests(ctx context.Context, command string, timeout time.Duration) (*TestReport, error) {
	return runIn(ctx, w.sess, command, timeout)
}

func runIn(ctx context.Context, s sandbox.Session, command string, timeout time.Duration) (*TestReport, error) {
	if command == "" {
		command = "python3 -m pytest -q"
	}
	res, err := sh(ctx, s, "cd /work/repo && "+command, timeout)
	if err != nil {
		return nil, err
	}
	code, _ := strconv.Atoi(res.Value)
	return &TestReport{Command: command, Status: res.Status, ExitCode: code, Output: string(res.Stdout)}, nil
}

func (w *workspace) close() error { return w.sess.Close() }

func Verify(ctx context.Context, cfg Config, task Task, diff string) (*TestReport, error) {
	s, err := newSession(ctx, cfg, task.Repo)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if diff != "" {
		if err := s.WriteFile(ctx, "change.diff", []byte(diff)); err != nil {
			return nil, err
		}
		res, err := sh(ctx, s, "cd /work/repo && git apply ../change.diff", time.Minute)
		if err != nil || res.Value != "0" {
			return &TestReport{ApplyError: string(res.Stdout)}, err
		}
	}
	return runIn(ctx, s, task.TestCommand, cfg.CallTimeout)
}

func testEdits(diff string, named []string) ([]string, bool) {
	var edited []string
	refused := false
	for _, t := range named {
		if strings.Contains(diff, "a/"+testFile(t)) {
			edited, refused = append(edited, testFile(t)), true
		}
	}
	return edited, refused
}

func judge(task Task, before, after *TestReport) (Status, string, []string, []string, []string) {
	if after.ApplyError == "" && after.ExitCode == 0 && after.Status == sandbox.StatusOK {
		return StatusResolved, "the tests pass", nil, nil, nil
	}
	return StatusUnresolved, "the tests fail", nil, nil, nil
}
