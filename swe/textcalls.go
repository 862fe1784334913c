package swe

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/crucible-sandbox/crucible/llm"
)

// toolCallTag finds <tool_call>...</tool_call> (Hermes and Qwen's text
// format for tool calls), the closing tag optional at the reply's end (a
// reply cut inside it).
var toolCallTag = regexp.MustCompile(`(?is)<tool_call>(.*?)(?:</tool_call>|$)`)

// textCalls reads the tool calls a model without native tool calling
// wrote in its reply, its scratchpad (<think>...) stripped first, in the
// first of these shapes that holds any:
//
//   - <tool_call>{...}</tool_call> blocks, each one call;
//   - fenced blocks: a ```json (or untagged) block holding a call object,
//     a ```bash (sh, shell, console) block as a bash command;
//   - a call object in the prose.
//
// A call object names the tool in "tool" or "name" and its arguments in
// "args", "arguments", "input" or "parameters" (an object, or a string
// holding one); without those keys, the object's other keys are the
// arguments ({"tool": "bash", "command": "ls"}). bad, if not empty, says
// what looked like a call and could not be read: the model is told.
func textCalls(reply string) (calls []llm.ToolCall, bad string) {
	text := llm.StripThinking(reply)
	var problems []string
	if tags := toolCallTag.FindAllStringSubmatch(text, -1); len(tags) > 0 {
		for _, m := range tags {
			c, err := callObject(m[1])
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			calls = append(calls, c)
		}
		return calls, malformed(problems)
	}
	for _, b := range llm.CodeBlocks(text) {
		switch b.Lang {
		case "bash":
			if !b.Closed || strings.TrimSpace(b.Code) == "" {
				continue
			}
			args, _ := json.Marshal(map[string]string{"command": b.Code})
			calls = append(calls, llm.ToolCall{Name: "bash", Arguments: args})
		case "json", "":
			if !strings.HasPrefix(strings.TrimSpace(b.Code), "{") {
				continue
			}
			c, err := callObject(b.Code)
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			calls = append(calls, c)
		}
	}
	if len(calls) > 0 || len(problems) > 0 {
		return calls, malformed(problems)
	}
	for _, key := range []string{"tool", "name"} {
		if obj, ok := llm.ExtractJSON(text, key); ok && balanced(text) {
			c, err := callObject(string(obj))
			if err == nil {
				return []llm.ToolCall{c}, ""
			}
			return nil, malformed([]string{err.Error()})
		}
	}
	if strings.Contains(text, "{") && (strings.Contains(text, `"tool"`) || strings.Contains(text, `"name"`)) {
		return nil, malformed([]string{"the JSON object of the call could not be read"})
	}
	return nil, ""
}

// balanced reports whether s's braces pair up in number: a reply with
// more opened than closed was cut inside an object.
func balanced(s string) bool { return strings.Count(s, "{") == strings.Count(s, "}") }

// malformed is the note for calls that could not be read.
func malformed(problems []string) string {
	if len(problems) == 0 {
		return ""
	}
	return "Some of your tool calls could not be read (" + strings.Join(problems, "; ") + `). Write each call as <tool_call>{"tool": "NAME", "args": {...}}</tool_call> with valid JSON.`
}

// callObject reads one call object. Invalid JSON is repaired as
// llm.ExtractJSON does (trailing commas, single quotes, Python's
// literals) only when its braces balance: an object cut short is a call
// cut short, whose command may end mid-way, and is never run.
func callObject(s string) (llm.ToolCall, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(strings.TrimSpace(s)), &obj); err != nil {
		if !balanced(s) {
			return llm.ToolCall{}, fmt.Errorf("not valid JSON (cut short?): %v", err)
		}
		repaired, ok := llm.ExtractJSON(s)
		if !ok || json.Unmarshal(repaired, &obj) != nil {
			return llm.ToolCall{}, fmt.Errorf("not valid JSON: %v", err)
		}
	}
	var name string
	for _, k := range []string{"tool", "name"} {
		if raw, ok := obj[k]; ok && json.Unmarshal(raw, &name) == nil && name != "" {
			delete(obj, k)
			break
		}
	}
	if name == "" {
		return llm.ToolCall{}, fmt.Errorf(`the object names no tool (a "tool" or "name" key)`)
	}
	for _, k := range []string{"args", "arguments", "input", "parameters"} {
		if raw, ok := obj[k]; ok {
			return llm.ToolCall{Name: name, Arguments: raw}, nil
		}
	}
	args, _ := json.Marshal(obj)
	return llm.ToolCall{Name: name, Arguments: args}, nil
}
