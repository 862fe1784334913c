package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/crucible-sandbox/crucible/llm"
)

// The tools offered to the model. File tools reach the sandbox's working
// directory only, never the host.
var toolDefs = []llm.Tool{
	{Name: "execute_code", Description: "Run Python code in the sandbox session (variables persist). Returns stdout, the last expression's value, errors and artifacts.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"code":{"type":"string","description":"Python code to run"}},"required":["code"]}`)},
	{Name: "read_file", Description: "Read a text file of the sandbox's working directory.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
	{Name: "write_file", Description: "Write a file in the sandbox's working directory.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`)},
	{Name: "list_files", Description: "List the sandbox's working directory.",
		Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
	{Name: "final_answer", Description: "Give the final answer, once executed code has produced it.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`)},
}

// maxReadBytes bounds what read_file returns to the model.
const maxReadBytes = 16 << 10

// toolTurn acts on a reply in native tool-calling mode.
func (r *run) toolTurn(ctx context.Context, reply llm.Reply) error {
	r.messages = append(r.messages, llm.Message{Role: llm.Assistant, Content: reply.Text, ToolCalls: reply.ToolCalls})
	if len(reply.ToolCalls) == 0 {
		note := "Reply with a tool call: execute_code to run code, or final_answer when the output answers the task."
		r.feedback(note)
		r.messages = append(r.messages, llm.Message{Role: llm.User, Content: note})
		return r.failAttempt()
	}
	// The calls run in order, each answered by its ID. Once one fails (an
	// attempt is counted), the rest are answered unrun: they may depend on
	// it, and one reply should not spend several attempts.
	failed := r.trace.Budget.FailedAttempts
	for _, tc := range reply.ToolCalls {
		if r.trace.Budget.FailedAttempts > failed {
			r.messages = append(r.messages, llm.Message{Role: llm.ToolRole, ToolCallID: tc.ID, Content: skippedNote})
			continue
		}
		result, err := r.callTool(ctx, tc)
		if r.trace.Status.HasAnswer() {
			return nil
		}
		r.messages = append(r.messages, llm.Message{Role: llm.ToolRole, ToolCallID: tc.ID, Content: result})
		if err != nil {
			return err
		}
	}
	return nil
}

// callTool runs one tool call and returns the text for the model. An
// error ends the loop (a budget, a refusal, a platform failure).
func (r *run) callTool(ctx context.Context, tc llm.ToolCall) (string, error) {
	var args struct {
		Code    *string `json:"code"`
		Path    *string `json:"path"`
		Content *string `json:"content"`
		Answer  *string `json:"answer"`
	}
	if err := json.Unmarshal(tc.Arguments, &args); err != nil && tc.Name != "list_files" {
		note := fmt.Sprintf("The arguments of %s are not valid JSON (%v). Call the tool again with a JSON object.", tc.Name, err)
		r.feedback(note)
		return note, r.failAttempt()
	}
	missing := func(field string) (string, error) {
		note := fmt.Sprintf("%s needs the argument %q.", tc.Name, field)
		r.feedback(note)
		return note, r.failAttempt()
	}
	switch tc.Name {
	case "execute_code":
		if args.Code == nil {
			return missing("code")
		}
		_, report, failed, err := r.execute(ctx, *args.Code)
		if err != nil {
			return "", err
		}
		if failed {
			r.feedback(report)
			return report, r.failAttempt()
		}
		return report, nil
	case "read_file":
		if args.Path == nil {
			return missing("path")
		}
		b, err := r.sess.ReadFile(ctx, *args.Path)
		r.fileStep("read_file " + *args.Path)
		if err != nil {
			return "error: " + err.Error(), nil
		}
		return clip(string(b), maxReadBytes), nil
	case "write_file":
		if args.Path == nil || args.Content == nil {
			return missing("path and content")
		}
		r.fileStep("write_file " + *args.Path)
		if err := r.sess.WriteFile(ctx, *args.Path, []byte(*args.Content)); err != nil {
			return "error: " + err.Error(), nil
		}
		return "written", nil
	case "list_files":
		files, err := r.sess.ListFiles(ctx)
		r.fileStep("list_files")
		if err != nil {
			return "error: " + err.Error(), nil
		}
		var b strings.Builder
		for _, f := range files {
			fmt.Fprintf(&b, "%s\t%d\n", f.Name, f.Size)
		}
		if b.Len() == 0 {
			return "(empty)", nil
		}
		return b.String(), nil
	case "final_answer":
		if args.Answer == nil {
			return missing("answer")
		}
		note, err := r.answer(ctx, *args.Answer)
		if note != "" {
			r.feedback(note)
		}
		return note, err
	}
	note := fmt.Sprintf("There is no tool %q; the tools are execute_code, read_file, write_file, list_files and final_answer.", tc.Name)
	r.feedback(note)
	return note, r.failAttempt()
}

func (r *run) fileStep(note string) {
	r.trace.Steps = append(r.trace.Steps, Step{Kind: StepTool, Attempt: r.trace.Budget.Attempts, Note: note})
}

// finalMarker starts a final answer in text mode.
const finalMarker = "FINAL ANSWER:"

// textTurn acts on a reply in text mode: a final answer, or a code block
// to run.
func (r *run) textTurn(ctx context.Context, reply llm.Reply) error {
	r.messages = append(r.messages, llm.Message{Role: llm.Assistant, Content: reply.Text})
	say := func(note string) { r.messages = append(r.messages, llm.Message{Role: llm.User, Content: note}) }
	// A marker in the scratchpad is the model thinking, not answering.
	if answer, ok := finalAnswer(llm.StripThinking(reply.Text)); ok {
		note, err := r.answer(ctx, answer)
		if note != "" {
			r.feedback(note)
			say(note)
		}
		return err
	}
	code, ok := llm.ExtractCode(reply.Text, "python")
	if !ok {
		note := "Reply with exactly one ```python fenced block to run, or a line starting " + finalMarker + " when the output answers the task."
		r.feedback(note)
		say(note)
		return r.failAttempt()
	}
	_, report, failed, err := r.execute(ctx, code)
	if err != nil {
		return err
	}
	if failed {
		r.feedback(report)
		say(report)
		return r.failAttempt()
	}
	say("The code ran:\n" + report + "\n\nIf this answers the task, reply with " + finalMarker + " and the answer; otherwise send the next code block.")
	return nil
}

// finalAnswer finds a line starting with finalMarker outside fenced code
// blocks and returns the text after the marker (the rest of the reply).
// A program that prints the marker is code to run, not an answer.
func finalAnswer(reply string) (string, bool) {
	lines := strings.Split(strings.ReplaceAll(reply, "\r\n", "\n"), "\n")
	fence := ""
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			for strings.HasPrefix(trimmed[len(fence):], fence[:1]) {
				fence += fence[:1]
			}
			continue
		}
		if rest, ok := strings.CutPrefix(trimmed, finalMarker); ok {
			return strings.TrimSpace(rest + "\n" + strings.Join(lines[i+1:], "\n")), true
		}
	}
	return "", false
}
