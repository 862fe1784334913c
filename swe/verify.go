package swe

import (
	"context"
	"fmt"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Verify runs the task's tests on the pristine repository with diff
// applied, in a fresh session of its own (never the agent's): the
// archive and the diff are placed read-only, a platform cell unpacks the
// archive inside the sandbox, applies the diff (git apply, then patch
// -p1 --fuzz=3; ApplyError, and no test run, when both fail) and runs the
// test command from the repository's root, for at most the call timeout.
// diff "" runs the tests on the pristine repository: the tests before.
//
// What the verdict can trust: the repository, the diff and the command
// are the caller's, and the session starts from nothing the agent
// touched. What it cannot: the code under test runs in pytest's own
// process, so a diff whose source code rewrites the report (or pytest)
// could make it say anything; test files, conftest.py and pytest's
// configuration the diff changes are reported by testEdits (and refused
// for named tests), and judge asks an exit status that agrees with a
// clean report when no tests are named.
func Verify(ctx context.Context, cfg Config, task Task, diff string) (*TestReport, error) {
	if err := task.Validate(); err != nil {
		return nil, err
	}
	if len(diff) > maxDiffBytes {
		return nil, &sandbox.InputError{Field: "diff", Rule: fmt.Sprintf("must be at most %d bytes, got %d", maxDiffBytes, len(diff))}
	}
	files := []sandbox.File{{Name: archiveName, Content: sandbox.Data(task.Repo.Archive)}}
	if diff != "" {
		files = append(files, sandbox.File{Name: diffName, Content: sandbox.Data(diff)})
	}
	sess, err := cfg.Sandbox.NewSession(ctx, sessionRequest(cfg, files))
	if err != nil {
		return nil, fmt.Errorf("open the verification's session: %w", err)
	}
	defer sess.Close()
	timeout := cfg.CallTimeout
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	spec := testSpec(task.TestCommand, timeout)
	spec["op"], spec["format"], spec["archive"] = "verify", repoFormat(task.Repo), "/work/"+archiveName
	if diff != "" {
		spec["diff"] = "/work/" + diffName
	}
	var ans testAnswer
	start := time.Now()
	if err := cellCall(ctx, sess, spec, timeout+openTime, &ans); err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	return ans.report(spec["command"].(string), time.Since(start)), nil
}
