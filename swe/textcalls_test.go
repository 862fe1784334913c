package swe

import (
	"encoding/json"
	"strings"
	"testing"
)

// The shapes in which models without native tool calling write calls.
func TestTextCalls(t *testing.T) {
	for _, tc := range []struct {
		name, reply string
		want        []string // "name args" of each call, args canonical JSON
		bad         string   // a part of the note for calls not read
	}{
		{"tool and args", `{"tool": "view", "args": {"path": "calc.py"}}`, []string{`view {"path":"calc.py"}`}, ""},
		{"name and arguments", `I'll look first. {"name": "bash", "arguments": {"command": "ls"}}`, []string{`bash {"command":"ls"}`}, ""},
		{"input", `{"tool": "search", "input": {"pattern": "def "}}`, []string{`search {"pattern":"def "}`}, ""},
		{"arguments as a string", `{"name": "bash", "arguments": "{\"command\": \"ls\"}"}`, []string{`bash "{\"command\": \"ls\"}"`}, ""},
		{"flat arguments", `{"tool": "bash", "command": "pytest -q"}`, []string{`bash {"command":"pytest -q"}`}, ""},
		{"tool_call tags, several", "<tool_call>{\"tool\": \"view\", \"args\": {\"path\": \"a.py\"}}</tool_call>\n<tool_call>\n{\"name\": \"run_tests\", \"arguments\": {}}\n</tool_call>",
			[]string{`view {"path":"a.py"}`, `run_tests {}`}, ""},
		{"a tag left open at the end", `<tool_call>{"tool": "submit", "args": {}}`, []string{`submit {}`}, ""},
		{"fenced bash", "Let me run the tests.\n```bash\npython3 -m pytest -q\n```\n", []string{`bash {"command":"python3 -m pytest -q"}`}, ""},
		{"fenced json", "```json\n{\"tool\": \"view\", \"args\": {\"path\": \"x.py\"}}\n```", []string{`view {"path":"x.py"}`}, ""},
		{"think block before, naming a tool", "<think>I could call {\"tool\": \"submit\"} but first\n```bash\nrm -rf /\n```\n</think>\n<tool_call>{\"tool\": \"view\", \"args\": {\"path\": \".\"}}</tool_call>",
			[]string{`view {"path":"."}`}, ""},
		{"repairable JSON (trailing comma, single quotes)", `<tool_call>{'tool': 'view', 'args': {'path': 'calc.py'},}</tool_call>`, []string{`view {"path":"calc.py"}`}, ""},
		{"malformed JSON in a tag", `<tool_call>{"tool": "bash", "args": {"command": "ls"</tool_call>`, nil, "could not be read"},
		{"an object cut short in prose", `I'll run {"tool": "bash", "args": {"command": "rm -rf /work/re`, nil, "could not be read"},
		{"a tag naming no tool", `<tool_call>{"args": {}}</tool_call>`, nil, "names no tool"},
		{"a cut bash fence runs nothing", "```bash\nrm -rf /work/re", nil, ""},
		{"prose", "The bug is in subtract; it should return a - b.", nil, ""},
		{"python code is not a call", "```python\nprint(1)\n```", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls, bad := textCalls(tc.reply)
			var got []string
			for _, c := range calls {
				args := string(c.Arguments)
				var v any
				if json.Unmarshal(c.Arguments, &v) == nil {
					b, _ := json.Marshal(v)
					args = string(b)
				}
				got = append(got, c.Name+" "+args)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("calls %q, want %q", got, tc.want)
			}
			if (tc.bad == "") != (bad == "") || !strings.Contains(bad, tc.bad) {
				t.Errorf("note %q, want one holding %q", bad, tc.bad)
			}
		})
	}
}

// Text mode end to end: the fix written as text, in the shapes above,
// with a scratchpad and a malformed call on the way.
func TestTextModeFix(t *testing.T) {
	for _, wire := range []string{wireOpenAI, wireAnthropic} {
		t.Run(wire, func(t *testing.T) {
			m := newWireModel(t, wire,
				func(t testing.TB, req *wireRequest) wireReply {
					if len(req.Tools) != 0 || !strings.Contains(req.System, "<tool_call>") {
						t.Errorf("text mode: tools %v offered, or the format not explained", req.Tools)
					}
					return wireReply{Text: "<think>Look at the module first.</think>\n{\"tool\": \"view\", \"args\": {\"path\": \"calc.py\"}}"}
				},
				seeing(prose("Now the tests:\n```bash\npython3 -m pytest -q 2>&1 | tail -1\n```"), "Result of call 1 (view)", "return a + b"),
				seeing(prose(`<tool_call>{"tool": "edit", "args": {"command": "str_replace", "path": "calc.py", "old_str": "x</tool_call>`), "1 failed, 1 passed"),
				seeing(prose("<tool_call>"+mustJSON(map[string]any{"name": "edit", "arguments": map[string]string{"command": "str_replace", "path": "calc.py", "old_str": "def subtract(a, b):\n    return a + b", "new_str": "def subtract(a, b):\n    return a - b"}})+"</tool_call>\n<tool_call>{\"name\": \"run_tests\", \"arguments\": {}}</tool_call>"), "could not be read"),
				seeing(prose(`All green. <tool_call>{"tool": "submit"}</tool_call>`), "Result of call 2 (run_tests)", "2 passed"),
			)
			res := runWith(t, m, Config{TextMode: true}, calcTask(t))
			if res.Status != StatusResolved || !res.Submitted || res.Trace.Budget.Steps != 5 {
				t.Fatalf("want resolved in 5 steps: %s", describeResult(res))
			}
		})
	}
}
