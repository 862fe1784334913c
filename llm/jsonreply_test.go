package llm

import (
	"strings"
	"testing"
)

func TestStripThinking(t *testing.T) {
	for _, tc := range []struct{ name, reply, want string }{
		{"none", "  42  ", "42"},
		{"closed block", "<think>6*7 is 42</think>\n\nThe answer is 42.", "The answer is 42."},
		{"thinking tag, any case", "<Thinking>\nhmm\n</Thinking>yes", "yes"},
		{"two blocks", "<think>a</think>one <think>b</think>two", "one two"},
		{"opened by the chat template", "Let me check the output... it prints 42.\n</think>\n\n{\"ok\": true}", `{"ok": true}`},
		{"cut inside the block", "<think>\nThe code reads the file and", ""},
		{"cut after an answer began", "Yes.\n<think>more", "Yes."},
		{"reasoning tag", "<reasoning>x</reasoning>DIRECT: 4", "DIRECT: 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := StripThinking(tc.reply); got != tc.want {
				t.Errorf("StripThinking(%q) = %q, want %q", tc.reply, got, tc.want)
			}
		})
	}
}

// The reply styles are those real models produce when asked for a JSON
// object in words.
func TestExtractJSON(t *testing.T) {
	for _, tc := range []struct {
		name, reply string
		required    []string
		want        string // "" means none found
	}{
		{"bare", `{"ok": true, "reason": "fine"}`, nil, `{"ok":true,"reason":"fine"}`},
		{"json fence", "```json\n{\n  \"ok\": false,\n  \"reason\": \"mean, not median\"\n}\n```", nil, `{"ok":false,"reason":"mean, not median"}`},
		{"untagged fence after prose", "Here is my verdict:\n```\n{\"ok\": true, \"reason\": \"x\"}\n```\nHope this helps!", nil, `{"ok":true,"reason":"x"}`},
		{"prose around", `Looks right: {"ok": true, "reason": "the output answers the task"} — done.`, nil, `{"ok":true,"reason":"the output answers the task"}`},
		{"after a think block", "<think>The output is {\"x\": 1}? No wait.</think>\n{\"ok\": true, \"reason\": \"r\"}", []string{"ok"}, `{"ok":true,"reason":"r"}`},
		{"template-opened think", "The code prints 42 {\"a\":1}\n</think>\n{\"ok\": true, \"reason\": \"r\"}", nil, `{"ok":true,"reason":"r"}`},
		{"first object lacks the key", `The program printed {"mean": 4.0}. Verdict: {"ok": false, "reason": "mean"}`, []string{"ok"}, `{"ok":false,"reason":"mean"}`},
		{"first valid object wins", `{"ok": true, "reason": "a"} {"ok": false, "reason": "b"}`, []string{"ok"}, `{"ok":true,"reason":"a"}`},
		{"trailing comma", "{\n  \"ok\": true,\n  \"reason\": \"fine\",\n}", nil, `{"ok":true,"reason":"fine"}`},
		{"single quotes, apostrophe inside", `{'ok': False, 'reason': "it's the mean"}`, nil, `{"ok":false,"reason":"it's the mean"}`},
		{"unquoted keys", `{ok: true, reason: 'matches'}`, nil, `{"ok":true,"reason":"matches"}`},
		{"python None", `{"needs_code": False, "answer": None}`, []string{"needs_code"}, `{"needs_code":false,"answer":null}`},
		{"cut before the brace", `{"ok": true, "reason": "the output is`, nil, `{"ok":true,"reason":"the output is"}`},
		{"braces in prose before a repairable object", `The set {1, 2} is small. {'ok': true, 'reason': 'x',}`, []string{"ok"}, `{"ok":true,"reason":"x"}`},
		{"plain yes", "Yes, the output answers the task.", nil, ""},
		{"array only", `[true, "fine"]`, nil, ""},
		{"required key missing", `{"verdict": "pass"}`, []string{"ok"}, ""},
		{"all in the scratchpad", "<think>{\"ok\": true}</think>I am not sure.", nil, ""},
		{"empty", "", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ExtractJSON(tc.reply, tc.required...)
			if string(got) != tc.want || ok != (tc.want != "") {
				t.Errorf("ExtractJSON(%q, %q) = %s, %v; want %s", tc.reply, tc.required, got, ok, tc.want)
			}
		})
	}
}

// A hostile reply (many braces, long) is searched within bounds: the
// object past them is not found, and the search ends.
func TestExtractJSONBounded(t *testing.T) {
	reply := strings.Repeat("{", 10_000) + `{"ok": true}` + strings.Repeat("x", 200_000)
	if got, ok := ExtractJSON(reply, "ok"); ok {
		t.Errorf("found %s past the bounds", got)
	}
}
