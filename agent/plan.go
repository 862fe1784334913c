package agent

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/crucible-sandbox/crucible/llm"
)

// judgeMaxTokens bounds the planner's and the verifier's replies: room
// for a reasoning model's scratchpad before a one-line answer.
const judgeMaxTokens = 4096

// planSchema is the planner's decision, asked for as structured output.
var planSchema = &llm.Schema{Name: "plan", Description: "Whether the task needs code, and the answer when it does not.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"needs_code":{"type":"boolean"},"answer":{"type":"string"}},"required":["needs_code","answer"],"additionalProperties":false}`)}

// plan asks whether the task needs code; it returns the answer when not.
// Only a task without files can be answered without running code.
func (r *run) plan(ctx context.Context, task Task) (string, error) {
	r.emit(StepPlan, "planning")
	prompt := task.Prompt
	if len(task.Files) > 0 {
		prompt += "\n\n(The task comes with files: " + fileNames(task.Files) + ".)"
	}
	reply, err := r.call(ctx, StepPlan, llm.Request{Messages: []llm.Message{
		{Role: llm.System, Content: plannerPrompt}, {Role: llm.User, Content: prompt}}, MaxTokens: judgeMaxTokens, Schema: planSchema})
	if err != nil {
		return "", err
	}
	if why, ok := refusal(reply); ok {
		return "", &errRefused{why}
	}
	direct, ok := parsePlan(reply)
	step := &r.trace.Steps[len(r.trace.Steps)-1]
	switch {
	case !ok:
		step.Note = "decision: code (the planner's reply could not be read)"
	case direct == "":
		step.Note = "decision: code"
	case len(task.Files) > 0:
		step.Note = "decision: code (the planner answered directly, but the task has files)"
		direct = ""
	default:
		step.Note = "decision: direct"
	}
	return direct, nil
}

// directLine is the planner's answer in the line format models fall back
// to: "DIRECT: <answer>", in any case, maybe in bold or code spans.
var directLine = regexp.MustCompile(`(?i)^[*_` + "`" + `\s]*direct[*_` + "`" + `]*\s*:[*_` + "`" + `\s]*(.*)$`)

// parsePlan reads the planner's decision from reply: the structured
// object, else a JSON object in the text (needs_code and answer), else a
// "DIRECT: <answer>" line. It returns the direct answer ("" when the task
// needs code); ok is false when no decision could be read, which means
// code too: running code is never the wrong call.
func parsePlan(reply llm.Reply) (direct string, ok bool) {
	for _, text := range []string{string(reply.Structured), reply.Text} {
		obj, found := llm.ExtractJSON(text, "needs_code")
		if !found {
			continue
		}
		var plan struct {
			NeedsCode json.RawMessage `json:"needs_code"`
			Answer    json.RawMessage `json:"answer"`
		}
		if json.Unmarshal(obj, &plan) != nil {
			continue
		}
		needsCode, known := yesNo(plan.NeedsCode)
		if !known {
			continue
		}
		if needsCode {
			return "", true
		}
		return jsonText(plan.Answer), true
	}
	lines := strings.Split(llm.StripThinking(reply.Text), "\n")
	for i, line := range lines {
		line = strings.TrimSpace(line)
		if m := directLine.FindStringSubmatch(line); m != nil {
			rest := strings.Join(append([]string{m[1]}, lines[i+1:]...), "\n")
			return strings.TrimSpace(strings.Trim(strings.TrimSpace(rest), "*_`")), true
		}
		if strings.EqualFold(strings.Trim(line, "*_`. "), "code") {
			return "", true
		}
	}
	return "", false
}

// yesNo reads a JSON boolean, or a string that says one ("true", "yes",
// "false", "no"); known is false for anything else.
func yesNo(raw json.RawMessage) (value, known bool) {
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return b, true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return false, false
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "yes":
		return true, true
	case "false", "no":
		return false, true
	}
	return false, false
}

// jsonText renders a JSON value as text: a string as it is, null as "",
// anything else (a number, say) as its JSON.
func jsonText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.TrimSpace(s)
	}
	if v := strings.TrimSpace(string(raw)); v != "null" {
		return v
	}
	return ""
}
