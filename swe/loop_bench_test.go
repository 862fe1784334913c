package swe

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// BenchmarkStepOverhead measures the platform's overhead per agent step:
// everything but the model. The model is SCRIPTED, a local server on
// OpenAI's wire answering at once (see scripted_test.go), alternating a
// view of a file and a small bash command; a step's overhead is the time
// from one model call's start to the next's, less the model call itself
// (the client's round trip to the local server included in the latter).
// The baseline, in the same run and the same kind of session, is the bare
// session's work for the same steps: an Exec of a cell running the same
// command with subprocess, and a ReadFile of the same file.
//
//	go test -tags crucible_initexe ./swe -run '^$' -bench StepOverhead -benchtime 3x
func BenchmarkStepOverhead(b *testing.B) {
	const steps = 40
	stepTimes, baseTimes := map[string][]float64{}, map[string][]float64{}
	var roundTrips []float64 // the model calls: the llm client and the local server
	for b.Loop() {
		m := newWireModel(b, wireOpenAI)
		m.after = func(_ testing.TB, req *wireRequest) wireReply {
			n := len(req.Messages)
			if n%4 == 1 {
				return wireReply{Calls: []wireCall{toCall("view", map[string]any{"path": "big.py", "start_line": n, "end_line": n + 20})}}
			}
			return wireReply{Calls: []wireCall{toCall("bash", map[string]string{"command": fmt.Sprintf("echo step %d", n)})}}
		}
		res := benchRun(b, m, Config{MaxSteps: steps})
		if res.Status != StatusBudget || res.Trace.Budget.Steps != steps {
			b.Fatalf("want the step budget spent: %s", describeResult(res))
		}
		var model *Step
		tool := ""
		for i, s := range res.Trace.Steps {
			switch {
			case s.Kind == StepTool:
				tool = s.Tool
			case s.Kind == StepModel && model != nil:
				gap := millis(s.At.Sub(model.At)) - model.DurationMS
				stepTimes[tool] = append(stepTimes[tool], gap)
			}
			if s.Kind == StepModel {
				model = &res.Trace.Steps[i]
				roundTrips = append(roundTrips, s.DurationMS)
			}
		}
		for k, v := range bareSteps(b, steps) {
			baseTimes[k] = append(baseTimes[k], v...)
		}
	}
	for _, k := range []string{"view", "bash"} {
		step, base := median(stepTimes[k]), median(baseTimes[k])
		b.ReportMetric(step, "ms/"+k+"-step")
		b.ReportMetric(step-base, "ms/"+k+"-overhead")
		fmt.Printf("%s steps: all but the model, median %.2f ms over %d steps; the bare session's same work (%s), median %.2f ms; overhead %.2f ms (target: step <= 20 ms)\n",
			k, step, len(stepTimes[k]), bareWork[k], base, step-base)
	}
	b.ReportMetric(median(roundTrips), "ms/model-call")
	fmt.Printf("model calls (the llm client's encoding and HTTP round trip to the instant local server, not counted above): median %.2f ms\n", median(roundTrips))
}

// bareWork says what the baseline of each kind of step is.
var bareWork = map[string]string{"view": "ReadFile", "bash": "Exec of subprocess.run"}

// benchRun is runWith for a benchmark.
func benchRun(b *testing.B, m *wireModel, cfg Config) *Result {
	cfg.Model = m.provider()
	cfg.Sandbox = nativeRuntime(b)
	cfg.CallTimeout = 30 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg, benchTask(b))
	if err != nil {
		b.Fatalf("Run: %v", err)
	}
	return res
}

// bareSteps times the bare session doing the same work as the agent's
// steps, alternately: a ReadFile of the file (view) and an Exec of a cell
// running the command with subprocess (bash).
func bareSteps(b *testing.B, steps int) map[string][]float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := Config{Sandbox: nativeRuntime(b)}
	ws, err := openWorkspace(ctx, cfg, benchTask(b).Repo)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.close()
	out := map[string][]float64{}
	for i := 0; i < steps; i++ {
		kind := "bash"
		start := time.Now()
		if i%2 == 0 {
			kind = "view"
			_, err = ws.sess.ReadFile(ctx, "repo/big.py")
		} else {
			var res sandbox.Result
			res, err = ws.sess.Exec(ctx, sandbox.Cell{Code: fmt.Sprintf("import subprocess\nsubprocess.run(['bash', '-c', 'echo step %d'], cwd='/work/repo').returncode", i)})
			if err == nil && res.Status != sandbox.StatusOK {
				err = fmt.Errorf("bare exec: %s %s", res.Status, res.Reason)
			}
		}
		if err != nil {
			b.Fatal(err)
		}
		out[kind] = append(out[kind], millis(time.Since(start)))
	}
	return out
}

// benchTask is the tiny repository with a module of 400 lines to view.
func benchTask(b *testing.B) Task {
	task := calcTask(b)
	big := ""
	for i := range 400 {
		big += fmt.Sprintf("VALUE_%d = %d\n", i, i*i)
	}
	task.Repo = Repo{Archive: tarGz(b, map[string]string{"calc.py": calcBuggy, "test_calc.py": calcTests, "big.py": big})}
	return task
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
