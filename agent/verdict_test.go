package agent

import (
	"encoding/json"
	"testing"

	"github.com/crucible-sandbox/crucible/llm"
)

// The verifier's replies, in the styles real models answer a request for
// {"ok": ..., "reason": ...} in: structured, JSON with prose, fences,
// scratchpads and repairs, and verdicts in words. An unreadable reply is
// never guessed at.
func TestReadVerdict(t *testing.T) {
	const unreadable = "UNREADABLE"
	for _, tc := range []struct {
		name  string
		reply llm.Reply
		// want is "ok: reason", "no: reason" or unreadable.
		want string
	}{
		{"structured", llm.Reply{Structured: json.RawMessage(`{"ok":true,"reason":"prints 42"}`), Text: `{"ok":true,"reason":"prints 42"}`}, "ok: prints 42"},
		{"bare JSON", llm.Reply{Text: `{"ok": false, "reason": "the mean, not the median"}`}, "no: the mean, not the median"},
		{"JSON in a fence after prose", llm.Reply{Text: "Let me check.\n```json\n{\"ok\": true, \"reason\": \"matches\"}\n```"}, "ok: matches"},
		{"JSON after a think block", llm.Reply{Text: "<think>The output {\"x\": 1} is...</think>\n{\"ok\": true, \"reason\": \"r\"}"}, "ok: r"},
		{"template-opened think", llm.Reply{Text: "I should check 6*7.\n</think>\n{\"ok\": true, \"reason\": \"r\"}"}, "ok: r"},
		{"trailing comma", llm.Reply{Text: "{\"ok\": true, \"reason\": \"r\",}"}, "ok: r"},
		{"single quotes and Python False", llm.Reply{Text: `{'ok': False, 'reason': "it's off by one"}`}, "no: it's off by one"},
		{"ok as a string", llm.Reply{Text: `{"ok": "yes", "reason": "r"}`}, "ok: r"},
		{"ok neither", llm.Reply{Text: `{"ok": "maybe", "reason": "r"}`}, unreadable},
		{"JSON without ok, words after", llm.Reply{Text: `{"correct": true}`}, unreadable},
		{"Yes.", llm.Reply{Text: "Yes."}, "ok: (no reason given)"},
		{"yes with a reason", llm.Reply{Text: "Yes, the output answers the task."}, "ok: the output answers the task."},
		{"bold yes", llm.Reply{Text: "**Yes** — the printed value is 42."}, "ok: the printed value is 42."},
		{"correct", llm.Reply{Text: "Correct."}, "ok: (no reason given)"},
		{"looks good", llm.Reply{Text: "Looks good to me!"}, "ok: (no reason given)"},
		{"LGTM", llm.Reply{Text: "LGTM"}, "ok: (no reason given)"},
		{"no issues", llm.Reply{Text: "No issues found: the code and answer agree."}, "ok: the code and answer agree."},
		{"no, because", llm.Reply{Text: "No, because the output is the mean and the task asks for the median."}, "no: the output is the mean and the task asks for the median."},
		{"incorrect with reason", llm.Reply{Text: "Incorrect: the answer says 41 but the output is 42."}, "no: the answer says 41 but the output is 42."},
		{"not correct", llm.Reply{Text: "Not correct; it ignores the header row."}, "no: it ignores the header row."},
		{"labelled last line", llm.Reply{Text: "The code reads the file and counts 3 rows.\nThe answer says 3.\n\nVerdict: correct"}, "ok: (no reason given)"},
		{"bare last line", llm.Reply{Text: "The output matches the answer.\n\n**Correct.**"}, "ok: (no reason given)"},
		{"think then words", llm.Reply{Text: "<think>hmm, 6*7=42</think>\nYes, 42 is right."}, "ok: 42 is right."},
		{"prose with no verdict", llm.Reply{Text: "The code multiplies 6 by 7 and prints 42, which is what the task asks for."}, unreadable},
		{"a last line that goes on", llm.Reply{Text: "Checked it.\nCorrect answer would be 41 though."}, unreadable},
		{"starts like a verdict, is not", llm.Reply{Text: "Correct answer would be 41."}, unreadable},
		{"cut inside the scratchpad", llm.Reply{Text: "<think>Let me look at the output", StopReason: "length"}, unreadable},
		{"refusal", llm.Reply{Refusal: "I can't help with that.", Text: "Yes"}, unreadable},
		{"empty", llm.Reply{}, unreadable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, ok := readVerdict(tc.reply)
			got := unreadable
			if ok && v.ok {
				got = "ok: " + v.reason
			} else if ok {
				got = "no: " + v.reason
			}
			if got != tc.want {
				t.Errorf("readVerdict(%+v) = %q, want %q", tc.reply, got, tc.want)
			}
		})
	}
}

// The planner's replies: structured, JSON in text, the line format models
// fall back to, and anything else (which means code).
func TestParsePlan(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reply  llm.Reply
		direct string
		ok     bool
	}{
		{"structured code", llm.Reply{Structured: json.RawMessage(`{"needs_code":true,"answer":""}`)}, "", true},
		{"structured direct", llm.Reply{Structured: json.RawMessage(`{"needs_code":false,"answer":"4"}`)}, "4", true},
		{"JSON in a fence", llm.Reply{Text: "```json\n{\"needs_code\": false, \"answer\": \"Paris\"}\n```"}, "Paris", true},
		{"answer as a number", llm.Reply{Text: `{"needs_code": false, "answer": 4}`}, "4", true},
		{"needs_code as a string", llm.Reply{Text: `{'needs_code': 'yes', 'answer': None}`}, "", true},
		{"direct without an answer", llm.Reply{Text: `{"needs_code": false, "answer": ""}`}, "", true},
		{"line CODE", llm.Reply{Text: "CODE"}, "", true},
		{"line code in bold", llm.Reply{Text: "**CODE**"}, "", true},
		{"line DIRECT", llm.Reply{Text: "DIRECT: 4"}, "4", true},
		{"DIRECT in bold, lower case", llm.Reply{Text: "**Direct:** 4"}, "4", true},
		{"DIRECT multi-line", llm.Reply{Text: "DIRECT: line one\nline two"}, "line one\nline two", true},
		{"think then DIRECT", llm.Reply{Text: "<think>2+2 is 4, CODE is not needed</think>\nDIRECT: 4"}, "4", true},
		{"prose then CODE", llm.Reply{Text: "This needs the file.\nCODE"}, "", true},
		{"prose", llm.Reply{Text: "I think we should compute this."}, "", false},
		{"empty", llm.Reply{}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			direct, ok := parsePlan(tc.reply)
			if direct != tc.direct || ok != tc.ok {
				t.Errorf("parsePlan(%+v) = %q, %v; want %q, %v", tc.reply, direct, ok, tc.direct, tc.ok)
			}
		})
	}
}

// Refusals: the provider's, and the ways models decline in words; and
// replies that only look like one.
func TestRefusal(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply llm.Reply
		want  string // "" means not a refusal
	}{
		{"OpenAI refusal field", llm.Reply{Refusal: "I'm sorry, I can't assist with that."}, "I'm sorry, I can't assist with that."},
		{"sorry, but I can't help", llm.Reply{Text: "I'm sorry, but I can't help with that request.\nIt could cause harm."}, "I'm sorry, but I can't help with that request."},
		{"curly apostrophe", llm.Reply{Text: "I’m sorry, but I can’t help with that."}, "I’m sorry, but I can’t help with that."},
		{"I cannot assist", llm.Reply{Text: "I cannot assist with creating malware."}, "I cannot assist with creating malware."},
		{"I won't", llm.Reply{Text: "Sorry, I won't do that."}, "Sorry, I won't do that."},
		{"I am unable to", llm.Reply{Text: "I am unable to comply with this request."}, "I am unable to comply with this request."},
		{"after a think block", llm.Reply{Text: "<think>This asks for credentials.</think>I can't help with that."}, "I can't help with that."},
		{"can't, but works", llm.Reply{Text: "I can't run code myself, so here it is:\n```python\nprint(42)\n```"}, ""},
		{"refusal-like with code", llm.Reply{Text: "I cannot help noticing:\n```python\nprint(1)\n```"}, ""},
		{"with a tool call", llm.Reply{Text: "I can't help but run this.", ToolCalls: []llm.ToolCall{{ID: "c", Name: "execute_code"}}}, ""},
		{"mid-sentence", llm.Reply{Text: "The task says I cannot help myself."}, ""},
		{"ordinary text", llm.Reply{Text: "Let me compute it."}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := refusal(tc.reply)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("refusal(%+v) = %q, %v; want %q", tc.reply, got, ok, tc.want)
			}
		})
	}
}
