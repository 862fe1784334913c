package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
)

// TestE2BSDK runs E2B's official JavaScript SDKs (npm e2b and
// @e2b/code-interpreter, pinned in tools/e2b-client) unchanged against a
// real `crucible serve`, configured by the environment alone:
// E2B_API_URL and E2B_SANDBOX_URL at the server's /e2b, E2B_API_KEY a
// key of `crucible key create --e2b`. Each subtest runs a script of
// tools/e2b-client/tests/e2e that prints what it saw as JSON: the seed's
// run_code_in_sandbox flow (a CSV written, pandas, a PNG chart, kill),
// commands.run, contexts keeping variables, an error with traceback, a
// cell that never ends, rich results, two tenants kept apart, keys
// refused, an ordinary crk_ key with E2B_VALIDATE_API_KEY=false, and the
// example of README.md. Afterwards no
// sandbox is left open.
func TestE2BSDK(t *testing.T) {
	e := startE2BServer(t, "--warm-sessions", "1")
	const scriptTimeout = 3 * time.Minute

	// Proves the seed's flow runs unchanged: Sandbox.create({timeoutMs:
	// 60_000}), files.write('/home/user/data.csv'), runCode of pandas that
	// prints df.shape and shows a matplotlib chart (logs, the main text,
	// no error, a PNG result), kill(); the sandbox is gone afterwards.
	t.Run("seed flow", func(t *testing.T) {
		var got struct {
			SandboxID string      `json:"sandboxId"`
			Success   bool        `json:"success"`
			Stdout    string      `json:"stdout"`
			Text      *string     `json:"text"`
			Stderr    string      `json:"stderr"`
			Charts    []string    `json:"charts"`
			Execution jsExecution `json:"execution"`
			MS        int         `json:"ms"`
			AfterKill jsThrown    `json:"afterKill"`
		}
		e.runScript(t, "tests/e2e/seed_flow.mjs", e.e2bEnv(e.AliceE2B), scriptTimeout, &got)
		if !got.Success || got.Stderr != "" || got.Execution.Error != nil {
			t.Errorf("success %v, error %q (%+v), want success", got.Success, got.Stderr, got.Execution.Error)
		}
		for _, want := range []string{"Shape: (6, 3)\n", "Columns: ['product', 'region', 'revenue']\n", "revenue", "mean", "310.25"} {
			if !strings.Contains(got.Stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, got.Stdout)
			}
		}
		if got.Text == nil || *got.Text != "914.0" {
			t.Errorf("execution.text %v, want the last expression's value 914.0", got.Text)
		}
		if len(got.Charts) != 1 {
			t.Fatalf("%d PNG results, want the one chart plt.show() drew; results: %+v", len(got.Charts), got.Execution.Results)
		}
		checkPNG(t, "the chart", got.Charts[0])
		if !got.AfterKill.Threw || got.AfterKill.Class != "SandboxNotFoundError" && got.AfterKill.Class != "NotFoundError" {
			t.Errorf("Sandbox.getInfo after kill: %v, want the SDK's not-found error", got.AfterKill)
		}
		t.Logf("the seed's flow end to end (node's clock): %d ms", got.MS)
	})

	// Proves the rich results E2B's Jupyter-based interpreter gives: a
	// DataFrame as the main result in text and HTML, a figure left open
	// as a PNG; then (a subtest of its own) a figure saved with
	// plt.savefig('/tmp/chart.png'), as the seed's DataAnalysisAgent tells
	// its model, and left open: still a PNG result on E2B, whose Jupyter
	// shows every figure open at the end of a cell.
	var rich struct {
		Frame          jsExecution `json:"frame"`
		Open           jsExecution `json:"open"`
		Saved          jsExecution `json:"saved"`
		SavedFileBytes int         `json:"savedFileBytes"`
		HTML           *string     `json:"html"`
	}
	pngsOf := func(x jsExecution) []string {
		var pngs []string
		for _, r := range x.Results {
			if r.PNG != nil {
				pngs = append(pngs, *r.PNG)
			}
		}
		return pngs
	}
	t.Run("rich results", func(t *testing.T) {
		e.runScript(t, "tests/e2e/results.mjs", e.e2bEnv(e.AliceE2B), scriptTimeout, &rich)
		if rich.Frame.text() != "   a  b\n0  1  x\n1  2  y" || rich.HTML == nil || !strings.Contains(*rich.HTML, "<table") {
			t.Errorf("a DataFrame's main result: text %q, html %v; want its text and an HTML table", rich.Frame.text(), rich.HTML)
		}
		if pngs := pngsOf(rich.Open); len(pngs) != 1 {
			t.Errorf("a figure left open: %d PNG results, want 1; error %+v", len(pngs), rich.Open.Error)
		} else {
			checkPNG(t, "a figure left open", pngs[0])
		}
		t.Run("savefig to /tmp", func(t *testing.T) {
			if rich.SavedFileBytes < 1000 {
				t.Errorf("/tmp/chart.png: %d bytes, want the saved chart", rich.SavedFileBytes)
			}
			if pngs := pngsOf(rich.Saved); len(pngs) != 1 {
				t.Errorf("a figure saved to /tmp/chart.png and left open: %d PNG results, want 1, as E2B's Jupyter shows it; error %+v", len(pngs), rich.Saved.Error)
			} else {
				checkPNG(t, "a figure saved with savefig", pngs[0])
			}
		})
	})

	// Proves commands.run: output returned and streamed, a failing
	// command's exit code and stderr in the SDK's CommandExitError, the
	// working directory /home/user (a file files.write put there read by
	// a relative path) and envs passed.
	t.Run("commands", func(t *testing.T) {
		type result struct {
			Stdout   string `json:"stdout"`
			Stderr   string `json:"stderr"`
			ExitCode int    `json:"exitCode"`
		}
		var got struct {
			Hi       result `json:"hi"`
			Streamed string `json:"streamed"`
			Failed   struct {
				jsThrown
				ExitCode *int    `json:"exitCode"`
				Stderr   *string `json:"stderr"`
			} `json:"failed"`
			Where result `json:"where"`
			PWD   string `json:"pwd"`
		}
		e.runScript(t, "tests/e2e/commands.mjs", e.e2bEnv(e.AliceE2B), scriptTimeout, &got)
		if got.Hi != (result{Stdout: "hi\n"}) {
			t.Errorf("commands.run('echo hi'): %+v, want stdout \"hi\\n\", exit 0", got.Hi)
		}
		if got.Streamed != "hi\n" {
			t.Errorf("onStdout got %q, want \"hi\\n\"", got.Streamed)
		}
		f := got.Failed
		if !f.Threw || f.Class != "CommandExitError" || f.ExitCode == nil || *f.ExitCode != 3 || f.Stderr == nil || *f.Stderr != "oops\n" {
			t.Errorf("a command exiting 3: %v exit %v stderr %v, want CommandExitError, 3, \"oops\\n\"", f.jsThrown, f.ExitCode, f.Stderr)
		}
		if got.Where.Stdout != "written by files.write\nhello from envs\n" {
			t.Errorf("cat note.txt and $GREETING: %q, want the file files.write put in /home/user and the envs' value", got.Where.Stdout)
		}
		t.Logf("pwd in a command: %q", got.PWD)
	})

	// Proves code contexts keep their variables apart: x set in one is
	// read back there, and another context and the default one raise
	// NameError.
	t.Run("contexts", func(t *testing.T) {
		var got struct {
			Context struct{ ID, Language, Cwd string } `json:"context"`
			Other   struct{ ID string }                `json:"other"`
			Set     jsExecution                        `json:"set"`
			Read    jsExecution                        `json:"read"`
			InOther jsExecution                        `json:"inOther"`
			InDef   jsExecution                        `json:"inDefault"`
			Listed  []string                           `json:"listed"`
		}
		e.runScript(t, "tests/e2e/contexts.mjs", e.e2bEnv(e.AliceE2B), scriptTimeout, &got)
		if got.Context.ID == "" || got.Context.ID == got.Other.ID {
			t.Errorf("contexts %q and %q, want two ids", got.Context.ID, got.Other.ID)
		}
		if got.Context.Language != "python" || got.Context.Cwd != "/home/user" {
			t.Errorf("context %+v, want language python, cwd /home/user", got.Context)
		}
		if got.Set.Error != nil || got.Read.text() != "1" || got.Read.Error != nil {
			t.Errorf("x = 1 then x in one context: %+v then text %q error %+v, want 1", got.Set.Error, got.Read.text(), got.Read.Error)
		}
		if got.InOther.errName() != "NameError" {
			t.Errorf("x in another context: text %q error %q, want NameError", got.InOther.text(), got.InOther.errName())
		}
		if got.InDef.errName() != "NameError" {
			t.Errorf("x in the default context: text %q error %q, want NameError", got.InDef.text(), got.InDef.errName())
		}
		if !slices.Contains(got.Listed, got.Context.ID) || !slices.Contains(got.Listed, got.Other.ID) {
			t.Errorf("listCodeContexts %v lacks %q or %q", got.Listed, got.Context.ID, got.Other.ID)
		}
	})

	// Proves an error comes back as execution.error with name, value and
	// a traceback naming it, through onError too, after what the cell
	// printed; the sandbox runs the next cell.
	t.Run("error with traceback", func(t *testing.T) {
		var got struct {
			Execution jsExecution                    `json:"execution"`
			OnError   []struct{ Name, Value string } `json:"onError"`
			Next      jsExecution                    `json:"next"`
		}
		e.runScript(t, "tests/e2e/errors.mjs", e.e2bEnv(e.AliceE2B), scriptTimeout, &got)
		x := got.Execution
		if x.Error == nil || x.Error.Name != "ZeroDivisionError" || !strings.Contains(x.Error.Value, "division by zero") ||
			!strings.Contains(x.Error.Traceback, "ZeroDivisionError") {
			t.Errorf("1/0: error %+v, want ZeroDivisionError, division by zero, a traceback naming it", x.Error)
		}
		if x.Stdout != "before\n" {
			t.Errorf("stdout %q, want what the cell printed before the error", x.Stdout)
		}
		if len(got.OnError) != 1 || got.OnError[0].Name != "ZeroDivisionError" {
			t.Errorf("onError saw %+v, want the ZeroDivisionError once", got.OnError)
		}
		if got.Next.Stdout != "after\n" || got.Next.Error != nil {
			t.Errorf("the next cell: %+v, want \"after\\n\"", got.Next)
		}
	})

	// Proves a cell that never ends is ended: runCode('while True: pass',
	// {timeoutMs: 2000}) throws the SDK's TimeoutError after about 2 s,
	// and the sandbox runs the next cell soon after.
	t.Run("timeout", func(t *testing.T) {
		var got struct {
			Spin   jsThrown    `json:"spin"`
			SpinMS int         `json:"spinMs"`
			Next   jsExecution `json:"next"`
			NextMS int         `json:"nextMs"`
			Kept   jsExecution `json:"kept"`
		}
		e.runScript(t, "tests/e2e/timeout.mjs", e.e2bEnv(e.AliceE2B), scriptTimeout, &got)
		if !got.Spin.Threw || got.Spin.Class != "TimeoutError" {
			t.Errorf("while True with timeoutMs 2000: %v, want the SDK's TimeoutError", got.Spin)
		}
		if got.SpinMS < 1900 || got.SpinMS > 10_000 {
			t.Errorf("it ended after %d ms, want about 2000", got.SpinMS)
		}
		if got.Next.Stdout != "still here\n" || got.Next.Error != nil {
			t.Errorf("the cell after: %+v, want \"still here\\n\"", got.Next)
		}
		if got.NextMS > 15_000 {
			t.Errorf("the cell after took %d ms: the endless cell was not stopped", got.NextMS)
		}
		t.Logf("after the timeout: the next cell in %d ms; variables kept: %q (error %q)", got.NextMS, got.Kept.text(), got.Kept.errName())
	})

	// Proves tenant isolation: bob, knowing alice's sandbox id, can neither
	// get, kill, connect to, extend nor list it, nor reach its code
	// interpreter, files or commands with his own sandbox's access token,
	// none, or his API key; alice's sandbox is untouched.
	t.Run("tenants isolated", func(t *testing.T) {
		type reach struct {
			RunCode  jsThrown `json:"runCode"`
			Read     jsThrown `json:"read"`
			Write    jsThrown `json:"write"`
			Command  jsThrown `json:"command"`
			Contexts jsThrown `json:"contexts"`
		}
		var got struct {
			A struct {
				ID             string `json:"id"`
				HasAccessToken bool   `json:"hasAccessToken"`
				State          string `json:"state"`
				After          string `json:"after"`
				PwnedExists    bool   `json:"pwnedExists"`
			} `json:"a"`
			B     struct{ ID string } `json:"b"`
			BInfo jsThrown            `json:"bInfo"`
			BKill struct {
				jsThrown
				Value any `json:"value"`
			} `json:"bKill"`
			BConnect   jsThrown `json:"bConnect"`
			BTimeout   jsThrown `json:"bTimeout"`
			BList      []string `json:"bList"`
			AList      []string `json:"aList"`
			WithBToken reach    `json:"withBToken"`
			WithNone   reach    `json:"withNoToken"`
			WithBKey   reach    `json:"withBKey"`
			BReadsOwn  jsThrown `json:"bReadsOwn"`
		}
		e.runScript(t, "tests/e2e/tenants.mjs", e.e2bEnv("", "TENANT_A_KEY="+e.AliceE2B, "TENANT_B_KEY="+e.BobE2B), scriptTimeout, &got)
		if !got.BInfo.Threw || !strings.Contains(got.BInfo.Class, "NotFound") {
			t.Errorf("bob's Sandbox.getInfo(alice's): %v, want not found", got.BInfo)
		}
		// The SDK's static kill answers false for a sandbox the API does
		// not know (404), and throws for other refusals.
		if !got.BKill.Threw && got.BKill.Value != false {
			t.Errorf("bob's Sandbox.kill(alice's): %v, want false (not found) or an error", got.BKill.Value)
		}
		if !got.BConnect.Threw {
			t.Errorf("bob's Sandbox.connect(alice's) succeeded")
		}
		if !got.BTimeout.Threw {
			t.Errorf("bob's Sandbox.setTimeout(alice's) succeeded")
		}
		if slices.Contains(got.BList, got.A.ID) || !slices.Contains(got.BList, got.B.ID) {
			t.Errorf("bob's list %v: want his %q and not alice's %q", got.BList, got.B.ID, got.A.ID)
		}
		if !slices.Contains(got.AList, got.A.ID) || slices.Contains(got.AList, got.B.ID) {
			t.Errorf("alice's list %v: want her %q and not bob's %q", got.AList, got.A.ID, got.B.ID)
		}
		for name, r := range map[string]reach{"bob's access token": got.WithBToken, "no token": got.WithNone, "bob's API key": got.WithBKey} {
			for op, j := range map[string]jsThrown{"runCode": r.RunCode, "files.read": r.Read, "files.write": r.Write, "commands.run": r.Command, "listCodeContexts": r.Contexts} {
				if !refusedRE.MatchString(j.Class + ": " + j.Message) {
					t.Errorf("%s on alice's sandbox with %s: %v, want a refusal (401, 403 or 404)", op, name, j)
				}
			}
		}
		if !got.BReadsOwn.Threw {
			t.Errorf("alice's file is in bob's sandbox")
		}
		if got.A.State != "running" || got.A.After != "tenant-a-secret\nFalse\n" || got.A.PwnedExists {
			t.Errorf("alice's sandbox afterwards: state %q, secret and leaked %q, pwned.txt %v; want running, the secret, False, no file",
				got.A.State, got.A.After, got.A.PwnedExists)
		}
		if !got.A.HasAccessToken {
			t.Logf("note: the create answer carries no envdAccessToken")
		}
	})

	// Proves keys Crucible does not know are refused with the SDK's
	// AuthenticationError: one of the right shape never made, and a
	// revoked key.
	t.Run("wrong key refused", func(t *testing.T) {
		var got struct {
			CreateUnknown jsThrown `json:"createUnknown"`
			ListUnknown   jsThrown `json:"listUnknown"`
			CreateRevoked jsThrown `json:"createRevoked"`
		}
		e.runScript(t, "tests/e2e/badkey.mjs", e.e2bEnv("", "REVOKED_KEY="+e.Revoked), scriptTimeout, &got)
		for what, j := range map[string]jsThrown{"Sandbox.create, unknown key": got.CreateUnknown,
			"Sandbox.list, unknown key": got.ListUnknown, "Sandbox.create, revoked key": got.CreateRevoked} {
			if !j.Threw || j.Class != "AuthenticationError" {
				t.Errorf("%s: %v, want AuthenticationError", what, j)
			}
		}
	})

	// Proves an ordinary Crucible key works with E2B_VALIDATE_API_KEY=false.
	t.Run("ordinary key", func(t *testing.T) {
		var got struct{ Stdout, Error string }
		e.runScript(t, "tests/e2e/plain_key.mjs", e.e2bEnv(e.AlicePlain, "E2B_VALIDATE_API_KEY=false"), scriptTimeout, &got)
		if got.Stdout != "1\n" || got.Error != "" {
			t.Errorf("print(1) with a crk_ key: stdout %q error %q", got.Stdout, got.Error)
		}
	})

	// Proves the seed's code in README.md runs as shown, with the
	// environment alone, and prints the output shown there.
	t.Run("docs example", func(t *testing.T) {
		code, want := docsExample(t)
		ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "node", "--input-type=module")
		cmd.Dir = e.Clients
		cmd.Env = e.e2bEnv(e.AliceE2B)
		cmd.Stdin = strings.NewReader(code)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("the docs' example: %v\nstderr:\n%s", err, clip(stderr.Bytes()))
		}
		if strings.TrimRight(string(out), "\n") != strings.TrimRight(want, "\n") {
			t.Errorf("the docs' example printed:\n%s\nthe docs show:\n%s", out, want)
		}
	})

	// Every script killed its sandboxes: no session is left open.
	for _, key := range []string{e.AlicePlain, e.BobPlain} {
		var open []api.SessionInfo
		if !poll(5*time.Second, func() bool { open = e.openSessions(t, key); return len(open) == 0 }) {
			t.Errorf("%d sessions left open 5 s after every sandbox was killed: %+v", len(open), open)
		}
	}
}
