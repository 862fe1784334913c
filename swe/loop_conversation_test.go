package swe

import (
	"fmt"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/llm"
)

// The conversation sent keeps the latest keepResults tool results whole
// and clips older long ones; the messages kept are never changed.
func TestConversationClipsOldResults(t *testing.T) {
	l := &loop{}
	long := strings.Repeat("x", 5000)
	for i := range keepResults + 3 {
		l.messages = append(l.messages, llm.Message{Role: llm.Assistant, ToolCalls: []llm.ToolCall{{ID: fmt.Sprint(i), Name: "bash"}}})
		l.results = append(l.results, len(l.messages))
		l.messages = append(l.messages, llm.Message{Role: llm.ToolRole, ToolCallID: fmt.Sprint(i), Content: fmt.Sprintf("%d:%s", i, long)})
	}
	l.results = append(l.results, len(l.messages))
	l.messages = append(l.messages, llm.Message{Role: llm.User, Content: "short"})
	sent := l.conversation()
	if len(sent) != len(l.messages) {
		t.Fatalf("%d messages sent, %d kept", len(sent), len(l.messages))
	}
	for n, i := range l.results {
		old := n < len(l.results)-keepResults
		clipped := strings.Contains(sent[i].Content, "an older result, shortened")
		if clipped != (old && len(l.messages[i].Content) > oldResultBytes) {
			t.Errorf("result %d (old %v): clipped %v, %d bytes", n, old, clipped, len(sent[i].Content))
		}
		if len(l.messages[i].Content) < 5000 && l.messages[i].Content != "short" {
			t.Errorf("the kept message %d was changed", n)
		}
	}
	if sent[l.results[0]].ToolCallID != "0" || len(sent[l.results[0]].Content) > oldResultBytes+200 {
		t.Errorf("the oldest result sent: %+v", sent[l.results[0]])
	}
}
