package service

import (
	"context"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// agentSandbox is an agent run's sandbox.SessionRuntime: the tenant's
// sessions of the service (recorded, redacted, linked to the run) in the
// run's image, whose cells tell the run's followers what runs and what
// it prints as it runs.
type agentSandbox struct {
	rt     sandbox.SessionRuntime
	image  string
	run    *agentRun
	opened func() // called once the session is open, or failed to open
}

func (a agentSandbox) NewSession(ctx context.Context, req sandbox.SessionRequest) (sandbox.Session, error) {
	req.Image = a.image
	sess, err := a.rt.NewSession(ctx, req)
	a.opened()
	if err != nil {
		return nil, err
	}
	return &agentSession{Session: sess, run: a.run}, nil
}

// agentSession is a session whose cells are published to the run's
// followers: the code, the output as it comes, and how it ended.
type agentSession struct {
	sandbox.Session
	run *agentRun
}

func (as *agentSession) Exec(ctx context.Context, cell sandbox.Cell) (sandbox.Result, error) {
	run := as.run
	attempt := run.currentAttempt()
	run.publishCode(attempt, cell.Code)
	cell.OnOutput = run.output // the service's session redacts it first
	res, err := as.Session.Exec(ctx, cell)
	if err == nil {
		run.publishExecution(attempt, res)
	}
	return res, err
}

// publishCode tells the run's followers that code, redacted, is about to
// run.
func (run *agentRun) publishCode(attempt int, code string) {
	code, _ = run.s.cfg.Redactor.RedactString(code)
	run.publish(EventCode, api.AgentEvent{Code: &api.AgentCode{Attempt: attempt, Code: code}})
}

// publishExecution tells the run's followers how a program ended.
func (run *agentRun) publishExecution(attempt int, res sandbox.Result) {
	run.publish(EventExecution, api.AgentEvent{Execution: &api.AgentExecution{Attempt: attempt, Status: res.Status,
		Reason: res.Reason, ExitCode: res.ExitCode, Error: res.Error, Artifacts: api.ArtifactMetas(res.Artifacts)}})
}
