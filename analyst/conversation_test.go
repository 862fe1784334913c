package analyst

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/crucible-sandbox/crucible/agent"
)

// Proves the conversation's bounds: the Analysis keeps the last
// MaxConversation answers; the model sees at most HistoryTurns of the
// newest, oldest first, within HistoryBudget characters, each recap
// with the answer (or why there is none), the code and the output.
func TestHistoryBounds(t *testing.T) {
	answer := func(i int, size int) *Answer {
		return &Answer{Question: fmt.Sprintf("q%d", i), Status: agent.StatusAnswered, Text: fmt.Sprintf("a%d", i),
			Code: fmt.Sprintf("x%d = %d\n", i, i) + strings.Repeat("#", size), Output: fmt.Sprintf("out%d", i)}
	}
	for _, tc := range []struct {
		name    string
		answers []*Answer
		kept    int    // answers in the conversation
		first   string // the oldest question in the history
		turns   int
	}{
		{"none", nil, 0, "", 0},
		{"a few", []*Answer{answer(1, 0), answer(2, 0)}, 2, "q1", 2},
		{"more than HistoryTurns", func() (as []*Answer) {
			for i := 1; i <= 12; i++ {
				as = append(as, answer(i, 0))
			}
			return
		}(), 12, "q5", HistoryTurns},
		{"more than MaxConversation", func() (as []*Answer) {
			for i := 1; i <= MaxConversation+3; i++ {
				as = append(as, answer(i, 0))
			}
			return
		}(), MaxConversation, fmt.Sprintf("q%d", MaxConversation+3-HistoryTurns+1), HistoryTurns},
		{"over the budget", []*Answer{answer(1, 2990), answer(2, 2990), answer(3, 2990), answer(4, 2990), answer(5, 2990), answer(6, 2990), answer(7, 2990), answer(8, 2990)},
			8, "q2", 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &Analysis{}
			for _, ans := range tc.answers {
				a.remember(ans)
			}
			if n := len(a.Conversation()); n != tc.kept {
				t.Errorf("conversation holds %d answers, want %d", n, tc.kept)
			}
			h := a.history()
			if len(h) != 2*tc.turns {
				t.Fatalf("history has %d messages, want %d", len(h), 2*tc.turns)
			}
			total := 0
			for i, m := range h {
				total += utf8.RuneCountInString(m.Content)
				if want := []string{"user", "assistant"}[i%2]; string(m.Role) != want {
					t.Errorf("message %d is %s, want %s", i, m.Role, want)
				}
			}
			if total > HistoryBudget {
				t.Errorf("history takes %d characters, over %d", total, HistoryBudget)
			}
			if tc.turns > 0 {
				if h[0].Content != tc.first {
					t.Errorf("oldest question %q, want %q", h[0].Content, tc.first)
				}
				last := tc.answers[len(tc.answers)-1]
				contains(t, "newest recap", h[len(h)-1].Content, "Answer: "+last.Text, "```python\n"+strings.SplitN(last.Code, "\n", 2)[0], "Its output:\n"+last.Output)
			}
		})
	}
	failed := &Analysis{}
	failed.remember(&Answer{Question: "q", Status: agent.StatusBudget, Reason: "attempts budget exhausted"})
	contains(t, "recap of a question with no answer", failed.history()[1].Content, "No answer (budget_exhausted: attempts budget exhausted).")
}
