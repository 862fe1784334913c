package analyst

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/crucible-sandbox/crucible/llm"
)

// Bounds on the conversation.
const (
	// MaxConversation caps the answers an Analysis keeps; older ones are
	// dropped (their variables stay in the session).
	MaxConversation = 50
	// HistoryTurns caps the earlier questions put before the model.
	HistoryTurns = 8
	// HistoryBudget caps, in characters, what the earlier questions take
	// in the model's prompt: the newest are kept whole as long as they
	// fit.
	HistoryBudget = 24_000
)

// Conversation returns the answers so far, oldest first (at most
// MaxConversation); a question being asked is not in it yet.
func (a *Analysis) Conversation() []*Answer {
	a.convMu.Lock()
	defer a.convMu.Unlock()
	return append([]*Answer(nil), a.conversation...)
}

// remember adds ans to the conversation, dropping the oldest past
// MaxConversation.
func (a *Analysis) remember(ans *Answer) {
	a.convMu.Lock()
	defer a.convMu.Unlock()
	a.conversation = append(a.conversation, ans)
	if n := len(a.conversation) - MaxConversation; n > 0 {
		a.conversation = append([]*Answer(nil), a.conversation[n:]...)
	}
}

// history is the conversation as the model sees it: each earlier
// question as the user's message, and its answer, code and output as the
// assistant's, newest last, bounded by HistoryTurns and HistoryBudget.
func (a *Analysis) history() []llm.Message {
	a.convMu.Lock()
	defer a.convMu.Unlock()
	var turns [][]llm.Message
	used := 0
	for i := len(a.conversation) - 1; i >= 0 && len(turns) < HistoryTurns; i-- {
		ans := a.conversation[i]
		turn := []llm.Message{{Role: llm.User, Content: ans.Question}, {Role: llm.Assistant, Content: recap(ans)}}
		n := utf8.RuneCountInString(turn[0].Content) + utf8.RuneCountInString(turn[1].Content)
		if used+n > HistoryBudget {
			break
		}
		used += n
		turns = append(turns, turn)
	}
	var out []llm.Message
	for i := len(turns) - 1; i >= 0; i-- {
		out = append(out, turns[i]...)
	}
	return out
}

// recap is an earlier answer as the model is reminded of it.
func recap(ans *Answer) string {
	var b strings.Builder
	if ans.Answered() {
		fmt.Fprintf(&b, "Answer: %s\n", clipText(ans.Text, 2000))
	} else {
		fmt.Fprintf(&b, "No answer (%s: %s).\n", ans.Status, clipText(ans.Reason, 300))
	}
	if ans.Code != "" {
		fmt.Fprintf(&b, "\nThe code that ran (its variables are still defined in the session):\n```python\n%s\n```\n", clipText(ans.Code, 3000))
	}
	if ans.Output != "" {
		fmt.Fprintf(&b, "\nIts output:\n%s\n", clipText(ans.Output, 1500))
	}
	for _, f := range ans.Files {
		fmt.Fprintf(&b, "It wrote %s.\n", f.Name)
	}
	return b.String()
}

// clipText cuts s to about n characters, saying how much was cut.
func clipText(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return truncateRunes(s, n) + fmt.Sprintf("\n…[%d characters cut]", utf8.RuneCountInString(s)-n)
}
