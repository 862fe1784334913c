package agent_test

// The reply styles real models produce, each through the whole loop: the
// model is SCRIPTED (no language model can run here; see
// scripted_test.go), a local server speaking the provider's real wire
// format replays the style, the real llm clients talk to it, and the real
// native sandbox runs the code.

import (
	"slices"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/agent"
)

// style is one reply style through the loop.
type style struct {
	name string
	wire string
	cfg  agent.Config
	s    script
	want outcome
	// check, if set, asserts more of the trace and the requests.
	check func(t *testing.T, h *harness, trace *agent.Trace)
}

func runStyles(t *testing.T, styles []style) {
	t.Helper()
	for _, tc := range styles {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.wire, tc.s)
			trace := h.run(t, tc.cfg, agent.Task{Prompt: "What is 6 times 7?"})
			expect(t, h, trace, tc.want)
			if tc.check != nil {
				tc.check(t, h, trace)
			}
		})
	}
}

// answered42 is a run answered "42" after execs cells and coder requests,
// with failed failed attempts.
func answered42(failed, execs, coder int) outcome {
	return outcome{status: agent.StatusAnswered, answer: "42", failed: failed, execs: execs, coder: coder}
}

// Text mode: code in prose, code with no fence, a scratchpad before the
// code that mentions the answer marker.
func TestTextModeStyles(t *testing.T) {
	textMode := agent.Config{TextMode: true}
	var styles []style
	for _, wire := range []string{wireOpenAI, wireAnthropic} {
		styles = append(styles,
			style{name: wire + ": prose around fenced code", wire: wire, cfg: textMode, s: script{Coder: []turn{
				text("Sure! Let me compute that.\n\n```python\nresult = 6 * 7\nprint(result)\n```\n\nThis prints the product."),
				checked(lastIs("user", "The code ran:\nstatus: ok\nstdout:\n42"), text("The product is 42.\n\nFINAL ANSWER: 42")),
			}}, want: answered42(0, 1, 2)},
			style{name: wire + ": code with no fence", wire: wire, cfg: textMode, s: script{Coder: []turn{
				text("import math\nprint(math.prod([6, 7]))"),
				checked(lastIs("user", "stdout:\n42"), text("FINAL ANSWER: 42")),
			}}, want: answered42(0, 1, 2)},
			style{name: wire + ": think block naming the marker before code", wire: wire, cfg: textMode, s: script{Coder: []turn{
				text("<think>\nI could just write\nFINAL ANSWER: 42\nbut I must run code first.\n</think>\n```python\nprint(6*7)\n```"),
				checked(lastIs("user", "stdout:\n42"), text("<think>It printed 42.</think>\nFINAL ANSWER: 42")),
			}}, want: answered42(0, 1, 2)},
		)
	}
	runStyles(t, styles)
}

// Tool calling: several calls in one reply (run in order, each answered
// by its ID), arguments as servers send them, a scratchpad in the text.
func TestToolCallStyles(t *testing.T) {
	var styles []style
	for _, wire := range []string{wireOpenAI, wireAnthropic} {
		prefix := map[string]string{wireOpenAI: "call_", wireAnthropic: "toolu_"}[wire]
		styles = append(styles,
			style{name: wire + ": several calls in one reply", wire: wire, s: script{Coder: []turn{
				reply(answer{Text: "I'll set x, then print it.", Calls: []call{
					{Name: "execute_code", Args: `{"code": "x = 6 * 7"}`},
					{Name: "execute_code", Args: `{"code": "print(x)"}`},
				}}),
				checked(lastResults(prefix+"1", "status: ok", prefix+"2", "stdout:\n42"), final("42")),
			}}, want: answered42(0, 2, 2), check: func(t *testing.T, h *harness, trace *agent.Trace) {
				if got := h.sandbox.execs; !slices.Equal(got, []string{"x = 6 * 7", "print(x)"}) {
					t.Errorf("cells run = %q, want both, in order", got)
				}
			}},
			style{name: wire + ": a call fails, the next is answered unrun", wire: wire, s: script{Coder: []turn{
				reply(answer{Calls: []call{
					{Name: "execute_code", Args: `{"code": "x = 6 * seven"}`},
					{Name: "execute_code", Args: `{"code": "print(x)"}`},
				}}),
				checked(lastResults(prefix+"1", "NameError", prefix+"2", "Not run: an earlier call in the same reply failed"), execute("print(6 * 7)")),
				final("42"),
			}}, want: answered42(1, 2, 3)},
			style{name: wire + ": arguments encoded twice", wire: wire, s: script{Coder: []turn{
				reply(answer{Calls: []call{{Name: "execute_code", Args: `{"code": "print(6*7)"}`, As: argsTwice}}}),
				checked(lastIs("tool", "stdout:\n42"), reply(answer{Calls: []call{{Name: "final_answer", Args: `{"answer": "42"}`, As: argsTwice}}})),
			}}, want: answered42(0, 1, 2)},
			style{name: wire + ": think block beside the call", wire: wire, s: script{Coder: []turn{
				reply(answer{Text: "<think>6*7, easy, but run it.</think>", Calls: []call{{Name: "execute_code", Args: `{"code": "print(6*7)"}`}}}),
				final("42"),
			}}, want: answered42(0, 1, 2)},
		)
	}
	styles = append(styles, style{name: "openai: arguments as an object", wire: wireOpenAI, s: script{Coder: []turn{
		reply(answer{Calls: []call{{Name: "execute_code", Args: `{"code": "print(6*7)"}`, As: argsObject}}}),
		checked(lastIs("tool", "stdout:\n42"), final("42")),
	}}, want: answered42(0, 1, 2)})
	runStyles(t, styles)
}

// lastResults asserts the request ends with one tool result per pair of
// (call ID, text the result contains), in order.
func lastResults(pairs ...string) func(t *testing.T, req *request) {
	return func(t *testing.T, req *request) {
		t.Helper()
		n := len(pairs) / 2
		if len(req.Messages) < n {
			t.Errorf("messages = %+v", req.Messages)
			return
		}
		for i, m := range req.Messages[len(req.Messages)-n:] {
			if m.Role != "tool" || m.ToolCallID != pairs[2*i] || !strings.Contains(m.Text, pairs[2*i+1]) {
				t.Errorf("result %d = %+v, want the answer to %s containing %q", i+1, m, pairs[2*i], pairs[2*i+1])
			}
		}
	}
}

// A reply cut at the token limit is not acted on: its code may end
// mid-way. The model is told, every call is answered, the cut counts as
// one failed attempt, and the model's shorter reply goes on.
func TestCutReply(t *testing.T) {
	told := "cut off at the token limit, so nothing in it was run"
	styles := []style{
		{name: "openai: tool call cut (finish_reason length)", wire: wireOpenAI, s: script{Coder: []turn{
			reply(answer{Calls: []call{{Name: "execute_code", Args: `{"code": "for i in range(3):\n    print(`}}, Stop: "length"}),
			checked(lastIs("tool", told), execute("print(6*7)")),
			final("42"),
		}}, want: answered42(1, 1, 3)},
		{name: "anthropic: tool call cut (stop_reason max_tokens)", wire: wireAnthropic, s: script{Coder: []turn{
			reply(answer{Text: "Here is a long program.", Calls: []call{{Name: "execute_code", Args: `{"code": "for i in range(3):"}`}}, Stop: "max_tokens"}),
			checked(lastIs("tool", told), execute("print(6*7)")),
			final("42"),
		}}, want: answered42(1, 1, 3)},
		{name: "openai text mode: fence cut", wire: wireOpenAI, cfg: agent.Config{TextMode: true}, s: script{Coder: []turn{
			reply(answer{Text: "```python\nfor i in range(3):\n    print(", Stop: "length"}),
			checked(lastIs("user", told), text("```python\nprint(6*7)\n```")),
			text("FINAL ANSWER: 42"),
		}}, want: answered42(1, 1, 3)},
		{name: "anthropic: cut every time ends on the attempts budget", wire: wireAnthropic, cfg: agent.Config{MaxRetries: 1}, s: script{Coder: []turn{
			reply(answer{Text: "<think>This is a long thought", Stop: "max_tokens"}),
			reply(answer{Text: "<think>Another long thought", Stop: "max_tokens"}),
		}}, want: outcome{status: agent.StatusBudget, reason: "attempts budget exhausted", failed: 2, coder: 2}},
	}
	runStyles(t, styles)
}

// A refusal ends the run at once with its own status and the model's
// words: the provider's refusal field or stop reason, or a refusal in
// prose, from the coder or the planner. Nothing runs, nothing loops.
func TestRefusals(t *testing.T) {
	const sorry = "I'm sorry, but I can't help with that."
	refused := func(coder int) outcome {
		return outcome{status: agent.StatusRefused, reason: "the model refused: " + sorry, coder: coder}
	}
	again := func(a answer) []turn { // the same reply as often as the old loop would ask
		return []turn{reply(a), reply(a), reply(a), reply(a)}
	}
	styles := []style{
		{name: "openai refusal field", wire: wireOpenAI, s: script{Coder: again(answer{Refusal: sorry})}, want: refused(1)},
		{name: "anthropic stop_reason refusal", wire: wireAnthropic, s: script{Coder: again(answer{Text: sorry, Stop: "refusal"})}, want: refused(1)},
		{name: "openai prose refusal", wire: wireOpenAI, s: script{Coder: again(answer{Text: sorry + "\nIt could be used to cause harm."})}, want: refused(1)},
		{name: "anthropic prose refusal, text mode", wire: wireAnthropic, cfg: agent.Config{TextMode: true}, s: script{Coder: again(answer{Text: sorry})}, want: refused(1)},
		{name: "planner refuses in prose", wire: wireOpenAI, s: script{Plan: sorry, Coder: again(answer{Text: sorry})}, want: refused(0),
			check: func(t *testing.T, h *harness, trace *agent.Trace) {
				if h.sandbox.sessions != 0 {
					t.Errorf("%d sandbox sessions after the planner refused, want 0", h.sandbox.sessions)
				}
			}},
	}
	runStyles(t, styles)
}

// The planner and the verifier ask for structured output: the schema is
// in each of their requests, their structured answers are read (OpenAI
// content, Anthropic the forced tool's input), and replies in prose
// around a scratchpad are read too.
func TestStructuredJudges(t *testing.T) {
	schemas := func(plan, verify string) func(t *testing.T, h *harness, trace *agent.Trace) {
		return func(t *testing.T, h *harness, trace *agent.Trace) {
			for _, r := range h.model.all() {
				want := map[string]string{rolePlan: plan, roleVerify: verify}[r.Role]
				if r.Schema != want {
					t.Errorf("%s request asks for schema %q, want %q", r.Role, r.Schema, want)
				}
			}
		}
	}
	var styles []style
	for _, wire := range []string{wireOpenAI, wireAnthropic} {
		styles = append(styles,
			style{name: wire + ": structured answers", wire: wire, s: script{Structured: true,
				Plan:     `{"needs_code": true, "answer": ""}`,
				Verdicts: []string{`{"ok": false, "reason": "say it as a number"}`, `{"ok": true, "reason": "42 is the product"}`},
				Coder:    []turn{execute("print(6*7)"), final("forty-two"), checked(lastIs("tool", "say it as a number"), final("42"))},
			}, want: answered42(1, 1, 3), check: schemas("plan", "verdict")},
			style{name: wire + ": structured direct answer", wire: wire, s: script{Structured: true, Plan: `{"needs_code": false, "answer": "42"}`},
				want: outcome{status: agent.StatusAnswered, answer: "42"}, check: schemas("plan", "verdict")},
			style{name: wire + ": think block and prose around the judges' JSON", wire: wire, s: script{
				Plan:     "<think>Multiplication; I know it, but {rules} say run code.</think>\n```json\n{\"needs_code\": true, \"answer\": \"\"}\n```",
				Verdicts: []string{"<think>The output {42} matches.</think>\nHere is my verdict: {'ok': True, 'reason': 'prints 42',}"},
				Coder:    []turn{execute("print(6*7)"), final("42")},
			}, want: answered42(0, 1, 2), check: func(t *testing.T, h *harness, trace *agent.Trace) {
				if v := stepsOf(trace, agent.StepVerify); len(v) != 1 || v[0].Note != "verdict: ok=true prints 42" {
					t.Errorf("verify steps = %+v", v)
				}
			}},
			style{name: wire + ": verdict in words", wire: wire, s: script{
				Plan:     "<think>needs computing</think>CODE",
				Verdicts: []string{"No, because the task asks for the product and the answer gives the sum.", "Looks good to me."},
				Coder:    []turn{execute("print(6*7)"), final("13"), checked(lastIs("tool", "A reviewer rejected the answer: the task asks for the product"), final("42"))},
			}, want: answered42(1, 1, 3)},
		)
	}
	styles = append(styles, style{name: "openai: planner in think then DIRECT", wire: wireOpenAI, s: script{Plan: "<think>2*3... no, 6*7 = 42.</think>\nDIRECT: 42"},
		want: outcome{status: agent.StatusAnswered, answer: "42"}})
	runStyles(t, styles)
}

// A server that refuses the schema (a 400 naming the field) is asked
// again in plain text at once, and the run never sends the schema again.
func TestSchemaRefusedByServer(t *testing.T) {
	for _, wire := range []string{wireOpenAI, wireAnthropic} {
		t.Run(wire, func(t *testing.T) {
			h := newHarness(t, wire, script{RejectSchema: true, Coder: []turn{execute("print(6*7)"), final("42")}})
			trace := h.run(t, agent.Config{}, agent.Task{Prompt: "What is 6 times 7?"})
			expect(t, h, trace, answered42(0, 1, 2))
			var got []string
			for _, r := range h.model.all() {
				if r.Role != roleCoder {
					got = append(got, r.Role+":"+r.Schema)
				}
			}
			if want := []string{"plan:plan", "plan:", "verify:"}; !slices.Equal(got, want) {
				t.Errorf("judge requests (role:schema) = %q, want %q", got, want)
			}
		})
	}
}
