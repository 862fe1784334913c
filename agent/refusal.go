package agent

import (
	"regexp"
	"strings"

	"github.com/crucible-sandbox/crucible/llm"
)

// errRefused reports that the model declined the task; its text quotes
// the model.
type errRefused struct{ text string }

func (e *errRefused) Error() string { return "the model refused: " + e.text }

// proseRefusal is how models decline in words, at the start of a reply
// (apostrophes made straight): "I'm sorry, but I can't help with that",
// "I cannot assist with this request", "Sorry, I won't do that", "I am
// unable to comply".
var proseRefusal = regexp.MustCompile(`(?i)^(?:(?:i'm|i am)\s+sorry|sorry)?[,.!]?\s*(?:but\s+)?` +
	`i(?:\s+can't|\s+cannot|\s+can not|\s+won't|\s+will not|'m\s+(?:not able|unable) to|\s+am\s+(?:not able|unable) to)\s+` +
	`(?:help|assist|comply|fulfil|fulfill|provide|do (?:that|this)|complete (?:that|this)|support (?:that|this)|engage)\b`)

// refusal reports whether reply declines the task, and the words that
// say so: the provider's refusal, or a reply with no tool call whose text
// (its scratchpad stripped) opens with a refusal. A reply that also
// holds code is not one: the model is working.
func refusal(reply llm.Reply) (string, bool) {
	if reply.Refusal != "" {
		return clip(reply.Refusal, 300), true
	}
	if len(reply.ToolCalls) > 0 {
		return "", false
	}
	text := llm.StripThinking(reply.Text)
	if !proseRefusal.MatchString(strings.ReplaceAll(text, "’", "'")) || len(llm.CodeBlocks(text)) > 0 {
		return "", false
	}
	return clip(firstLine(text), 300), true
}
