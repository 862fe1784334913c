package swe

import (
	"regexp"
	"strings"

	"github.com/crucible-sandbox/crucible/llm"
)

// proseRefusal is how models decline in words, at the start of a reply
// (apostrophes made straight): "I'm sorry, but I can't help with that",
// "I cannot assist with this request", "Sorry, I won't do that". The
// same rule as the code agent's (agent/refusal.go).
var proseRefusal = regexp.MustCompile(`(?i)^(?:(?:i'm|i am)\s+sorry|sorry)?[,.!]?\s*(?:but\s+)?` +
	`i(?:\s+can't|\s+cannot|\s+can not|\s+won't|\s+will not|'m\s+(?:not able|unable) to|\s+am\s+(?:not able|unable) to)\s+` +
	`(?:help|assist|comply|fulfil|fulfill|provide|do (?:that|this)|complete (?:that|this)|support (?:that|this)|engage)\b`)

// refusal reports whether a reply declines the task, and the words that
// say so: the provider's refusal, or a reply with no tool call (and, in
// text mode, no code) whose text, its scratchpad stripped, opens with a
// refusal.
func refusal(reply llm.Reply) (string, bool) {
	if reply.Refusal != "" {
		return clipText(reply.Refusal, 300), true
	}
	if len(reply.ToolCalls) > 0 {
		return "", false
	}
	text := llm.StripThinking(reply.Text)
	if !proseRefusal.MatchString(strings.ReplaceAll(text, "’", "'")) || len(llm.CodeBlocks(text)) > 0 || strings.Contains(text, "<tool_call>") {
		return "", false
	}
	return clipText(firstLine(text), 300), true
}
