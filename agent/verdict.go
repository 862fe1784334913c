package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/crucible-sandbox/crucible/llm"
)

// verdictSchema is the verifier's verdict, asked for as structured output.
var verdictSchema = &llm.Schema{Name: "verdict", Description: "Whether the output answers the task, and why.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"},"reason":{"type":"string"}},"required":["ok","reason"],"additionalProperties":false}`)}

// verdict is the verifier's judgement of an answer.
type verdict struct {
	ok     bool
	reason string
}

// verify asks the verifier whether the evidence supports the answer. A
// reply it cannot read is asked again once; readable is false when the
// second cannot be read either. Each call is a verify step whose note
// gives the verdict or why it was unreadable.
func (r *run) verify(ctx context.Context, answer string) (v verdict, readable bool, err error) {
	r.emit(StepVerify, "verifying the answer")
	ev := r.evidence
	prompt := fmt.Sprintf("Task:\n%s\n\nCode:\n```python\n%s\n```\n\nOutput:\n%s\n\nProposed answer:\n%s",
		r.trace.Task, ev.code, describe(ev.result), answer)
	messages := []llm.Message{{Role: llm.System, Content: verifierPrompt}, {Role: llm.User, Content: prompt}}
	for asked := 1; ; asked++ {
		reply, err := r.call(ctx, StepVerify, llm.Request{Messages: messages, MaxTokens: judgeMaxTokens, Schema: verdictSchema})
		if err != nil {
			return v, false, err
		}
		step := &r.trace.Steps[len(r.trace.Steps)-1]
		v, readable = readVerdict(reply)
		switch {
		case readable:
			step.Note = fmt.Sprintf("verdict: ok=%v %s", v.ok, v.reason)
			return v, true, nil
		case reply.Refusal != "":
			step.Note = "verdict unreadable: the verifier refused: " + clip(reply.Refusal, 300)
		case reply.Cut():
			step.Note = "verdict unreadable: the reply was cut at the token limit"
		default:
			step.Note = "verdict unreadable: " + clip(reply.Text, 300)
		}
		if asked == 2 {
			return v, false, nil
		}
		r.emit(StepVerify, "asking the verifier again: its reply could not be read")
		if text := strings.TrimSpace(reply.Text); text != "" {
			messages = append(messages, llm.Message{Role: llm.Assistant, Content: text})
		}
		messages = append(messages, llm.Message{Role: llm.User, Content: verdictAgain})
	}
}

// readVerdict reads the verifier's verdict from reply: the structured
// object, else a JSON object with "ok" in the text (in prose or a fence,
// repaired if need be), else a verdict in words. A refusal is no verdict.
func readVerdict(reply llm.Reply) (verdict, bool) {
	if reply.Refusal != "" {
		return verdict{}, false
	}
	for _, text := range []string{string(reply.Structured), reply.Text} {
		obj, found := llm.ExtractJSON(text, "ok")
		if !found {
			continue
		}
		var raw struct {
			OK     json.RawMessage `json:"ok"`
			Reason json.RawMessage `json:"reason"`
		}
		if json.Unmarshal(obj, &raw) != nil {
			continue
		}
		if ok, known := yesNo(raw.OK); known {
			return verdict{ok: ok, reason: jsonText(raw.Reason)}, true
		}
	}
	return wordVerdict(reply.Text)
}

// Verdicts in words: the clause that opens the reply's first line (or
// the whole of its last line), lower-cased, up to the first punctuation.
var (
	approvals = words("yes", "y", "ok", "okay", "correct", "right", "true", "valid", "verified", "approved", "pass", "passed",
		"lgtm", "looks good", "looks good to me", "looks correct", "looks right", "all good", "it is correct",
		"this is correct", "that is correct", "the answer is correct")
	rejections = words("no", "n", "nope", "incorrect", "wrong", "false", "invalid", "rejected", "fail", "failed",
		"not correct", "not ok", "not quite", "partially correct", "it is incorrect", "this is incorrect",
		"that is incorrect", "the answer is incorrect", "the answer is wrong")
)

func words(list ...string) map[string]bool {
	m := make(map[string]bool, len(list))
	for _, w := range list {
		m[w] = true
	}
	return m
}

// noIssues opens an approval that starts with "no": "No issues found".
var noIssues = regexp.MustCompile(`^no (?:issues|problems|errors|mistakes|concerns)\b`)

// verdictLabel opens a line that announces the verdict: "Verdict:",
// "Final answer -", "**Assessment:**".
var verdictLabel = regexp.MustCompile(`(?i)^(?:final\s+)?(?:verdict|answer|decision|result|judge?ment|assessment|evaluation)\s*[:\-–—]\s*`)

// clauseEnd ends the clause that states a verdict.
const clauseEnd = ".,;:!?()—–\n"

// wordVerdict reads a verdict stated in words: "Yes.", "Correct — the
// output is 42", "No, because it prints the mean", "Looks good to me",
// "Verdict: incorrect". The first line may go on with the reason; the
// last line counts only when it is a verdict and nothing else (the end of
// a reasoning written before it). Anything else is unreadable: a wrong
// guess here would approve or reject an answer no one judged.
func wordVerdict(reply string) (verdict, bool) {
	var lines []string
	for _, l := range strings.Split(llm.StripThinking(reply), "\n") {
		if l = strings.TrimSpace(strings.TrimLeft(l, "*_#>`- \t")); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return verdict{}, false
	}
	if v, ok := clauseVerdict(strings.Join(lines, "\n"), false); ok {
		return v, true
	}
	if len(lines) > 1 {
		return clauseVerdict(lines[len(lines)-1], true)
	}
	return verdict{}, false
}

// clauseVerdict reads the verdict that opens text; whole says text must
// hold nothing else (markup and punctuation aside).
func clauseVerdict(text string, whole bool) (verdict, bool) {
	text = verdictLabel.ReplaceAllString(text, "")
	text = strings.TrimLeft(text, "*_` ")
	end := strings.IndexAny(text, clauseEnd)
	if end < 0 {
		end = len(text)
	}
	clause := strings.ToLower(strings.Trim(text[:end], "*_` "))
	rest := strings.TrimSpace(strings.TrimLeft(text[end:], clauseEnd+"*_` "))
	if whole && rest != "" {
		return verdict{}, false
	}
	ok, known := false, false
	switch first, _, _ := strings.Cut(clause, " "); {
	case approvals[clause], noIssues.MatchString(clause):
		ok, known = true, true
	case rejections[clause]:
		known = true
	case first == "yes":
		ok, known = true, true
	case first == "no":
		known = true
	}
	if !known {
		return verdict{}, false
	}
	reason := strings.TrimSpace(strings.TrimPrefix(rest, "because "))
	if reason == "" {
		reason = "(no reason given)"
	}
	return verdict{ok: ok, reason: reason}, true
}
