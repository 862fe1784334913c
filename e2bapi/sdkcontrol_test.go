package e2bapi_test

import (
	"slices"
	"strings"
	"testing"
)

// TestSDKControlPlane: through E2B's official SDK (controlplane.mjs), a
// sandbox is created, runs code, is described, listed, given a timeout,
// connected to and killed; a second tenant can neither see nor reach it
// (list, info, kill, connect, and the data plane with its own token under
// the other sandbox's ID); pause and metrics are refused saying why; a
// wrong key is an AuthenticationError; a
// sandbox whose timeout passed is gone.
func TestSDKControlPlane(t *testing.T) {
	ts := newTestServer(t, nil)
	keyA, keyB := ts.newKey("team-a"), ts.newKey("team-b")
	var got struct {
		SandboxID, Stdout, ConnectedRun string
		Info                            struct {
			TemplateID, State string
			LifeS             int
		}
		Listed, OtherListed                     []string
		Running, StillRunning, RunningAfterKill bool
		LifeAfterSetTimeoutS                    int
		OtherInfo, OtherKill, OtherConnect      thrown
		OtherRunCode, OtherRead, WrongKey       thrown
		Pause, Metrics                          thrown
		Killed, KillAgain                       bool
		InfoAfterKill, ExpiredInfo              thrown
		ExpiredRunning                          bool
		FirstRunMs, RunCodeMs, CreateRunKillMs  float64
	}
	runSDK(t, ts, "controlplane.mjs", keyA, &got, "OTHER_KEY="+keyB)
	checks := []struct {
		ok   bool
		what string
	}{
		{got.Stdout == "1\n", "runCode('print(1)') printed 1"},
		{got.Info.TemplateID == "code-interpreter-v1" && got.Info.State == "running" && got.Info.LifeS == 300, "getInfo: the template, running, 300 s"},
		{slices.Equal(got.Listed, []string{got.SandboxID}), "list shows the sandbox"},
		{got.Running && got.StillRunning, "isRunning while it runs"},
		{got.LifeAfterSetTimeoutS >= 115 && got.LifeAfterSetTimeoutS <= 120, "setTimeout(120 s)"},
		{got.ConnectedRun == "2\n", "a connected sandbox runs code"},
		{len(got.OtherListed) == 1 && got.OtherListed[0] != got.SandboxID, "the other tenant lists only its own"},
		{got.OtherInfo.Name == "SandboxNotFoundError", "the other tenant's getInfo: not found"},
		{got.OtherKill.Returned == false, "the other tenant's kill: false (not found)"},
		{got.OtherConnect.Name == "SandboxNotFoundError", "the other tenant's connect: not found"},
		{got.OtherRunCode.Name == "SandboxError" && strings.Contains(got.OtherRunCode.Message, "401"), "runCode with the other sandbox's token: 401"},
		{got.OtherRead.Name == "AuthenticationError", "files.read with the other sandbox's token: AuthenticationError"},
		{got.WrongKey.Name == "AuthenticationError", "a wrong key: AuthenticationError"},
		{got.Pause.Name == "SandboxError" && strings.Contains(got.Pause.Message, "501: pausing a sandbox is not supported"), "pause: not supported"},
		{got.Metrics.Name == "SandboxError" && strings.Contains(got.Metrics.Message, "501: sandbox metrics are not served"), "getMetrics: not served"},
		{got.Killed && !got.RunningAfterKill && !got.KillAgain && got.InfoAfterKill.Name == "SandboxNotFoundError", "kill, then gone"},
		{!got.ExpiredRunning && got.ExpiredInfo.Name == "SandboxNotFoundError", "a sandbox whose timeout passed is gone"},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: no; the script saw %+v", c.what, got)
		}
	}
	ts.waitSessionsClosed("team-a", "team-b")
	t.Logf("SDK: first create+runCode %.1f ms; runCode round trip on a live sandbox %.2f ms; create+runCode+kill %.1f ms",
		got.FirstRunMs, got.RunCodeMs, got.CreateRunKillMs)
}
