package swe

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/crucible-sandbox/crucible/llm"
)

// loop is the agent's conversation with the model, in progress.
type loop struct {
	cfg      Config
	task     Task
	ws       *workspace
	res      *Result
	messages []llm.Message
	// history holds each file's earlier contents, for undo (host side:
	// nothing in the sandbox can change it).
	history map[string][]fileVersion
	// repeats counts each (call, result) fingerprint; warned marks those
	// the model was warned about.
	repeats map[string]int
	warned  map[string]bool
	// prose counts replies in a row that called no tool.
	prose int
	// textIDs numbers the calls written as text.
	textIDs int
	// results are the indexes in messages of the tool results (and the
	// user messages carrying text calls' results), oldest first.
	results []int
}

// ending is how the loop ends: submitted, or a status and its reason.
type ending struct {
	status    Status
	reason    string
	submitted bool
}

// Thresholds of the model's behaviour.
const (
	// maxProse is how many replies in a row may call no tool before the
	// run stops as failed.
	maxProse = 3
	// loopWarnAt is the count of one (call, result) at which the model is
	// warned; a repeat after the warning stops the run as looping.
	loopWarnAt = 3
)

func (l *loop) emit(kind StepKind, msg string) {
	if l.cfg.OnEvent != nil {
		l.cfg.OnEvent(Event{Kind: kind, Step: l.res.Trace.Budget.Steps, Message: l.redact(msg)})
	}
}

// redact applies Config.Redact.
func (l *loop) redact(s string) string {
	if l.cfg.Redact == nil {
		return s
	}
	return l.cfg.Redact(s)
}

// note records a note sent to the model (or said about the run).
func (l *loop) note(text string) {
	l.res.Trace.Steps = append(l.res.Trace.Steps, Step{Kind: StepFeedback, At: time.Now().UTC(), Note: text})
	l.emit(StepFeedback, firstLine(text))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// contextEnding says why ctx ended: the wall-time budget, or the caller.
func (l *loop) contextEnding(ctx context.Context) *ending {
	if errors.Is(context.Cause(ctx), errWallTime) {
		return &ending{status: StatusBudget, reason: fmt.Sprintf("the wall-time budget (%s, less the time kept for verification) ran out", l.cfg.MaxWallTime)}
	}
	return &ending{status: StatusFailed, reason: "cancelled: " + context.Cause(ctx).Error()}
}

// errWallTime is the cause of the loop's context ending at its deadline.
var errWallTime = errors.New("wall-time budget exhausted")

// work runs the conversation until it ends.
func (l *loop) work(ctx context.Context) *ending {
	l.messages = []llm.Message{
		{Role: llm.System, Content: systemPrompt(l.task, l.cfg.TextMode)},
		{Role: llm.User, Content: l.redact(l.task.Prompt)},
	}
	for {
		b := &l.res.Trace.Budget
		switch {
		case ctx.Err() != nil:
			return l.contextEnding(ctx)
		case b.Steps >= b.MaxSteps:
			return &ending{status: StatusBudget, reason: fmt.Sprintf("the step budget (%d model turns) ran out before a submission", b.MaxSteps)}
		case b.Tokens >= b.MaxTokens:
			return &ending{status: StatusBudget, reason: fmt.Sprintf("the token budget (%d) ran out before a submission (%d used)", b.MaxTokens, b.Tokens)}
		}
		if end := l.turn(ctx); end != nil {
			return end
		}
	}
}

// turn makes one model call and acts on the reply.
func (l *loop) turn(ctx context.Context) *ending {
	b := &l.res.Trace.Budget
	b.Steps++
	req := llm.Request{Messages: l.conversation()}
	if !l.cfg.TextMode {
		req.Tools = toolDefs
	}
	l.emit(StepModel, "asking the model")
	start := time.Now()
	reply, err := l.cfg.Model.Complete(ctx, req)
	step := Step{Kind: StepModel, At: start.UTC(), Request: &req, DurationMS: millis(time.Since(start))}
	if err != nil {
		step.Note = "model error: " + err.Error()
		l.res.Trace.Steps = append(l.res.Trace.Steps, step)
		if ctx.Err() != nil {
			return l.contextEnding(ctx)
		}
		return &ending{status: StatusFailed, reason: "the model failed: " + err.Error()}
	}
	step.Reply = &reply
	b.Tokens += reply.Usage.Total()
	l.res.Trace.Steps = append(l.res.Trace.Steps, step)

	if why, ok := refusal(reply); ok {
		return &ending{status: StatusRefused, reason: "the model refused: " + why}
	}
	calls, textual, bad := l.calls(reply)
	l.messages = append(l.messages, assistantMessage(reply, textual))
	if reply.Cut() {
		// Nothing of a cut reply runs: its arguments may end mid-way. Each
		// native call is answered (the API wants every ID answered).
		l.note(cutNote)
		l.answerAll(calls, textual, cutNote)
		return l.idle()
	}
	if len(calls) == 0 {
		note := proseNote
		if bad != "" {
			note = bad
		}
		l.note(note)
		l.say(note)
		return l.idle()
	}
	l.prose = 0
	var results []string
	for _, c := range calls {
		o := l.callTool(ctx, c.Name, c.Arguments)
		if o.feedback {
			l.emit(StepFeedback, firstLine(o.out))
		}
		if o.end == nil && !o.feedback {
			o = l.checkRepeat(c, o)
		}
		if o.end != nil {
			if !o.end.submitted {
				l.note(o.end.reason)
			}
			// The rest of the reply is not run; the conversation ends here,
			// so nothing needs answering.
			return o.end
		}
		results = append(results, o.out)
		if !textual {
			l.results = append(l.results, len(l.messages))
			l.messages = append(l.messages, llm.Message{Role: llm.ToolRole, ToolCallID: c.ID, Content: o.out})
		}
	}
	if textual {
		l.results = append(l.results, len(l.messages))
		l.say(textResults(calls, results, bad))
	}
	return nil
}

// Bounds of the conversation sent: the latest keepResults tool results
// go as they are; older ones are clipped to oldResultBytes, as SWE-agent
// does with old observations, so a long run's requests do not grow with
// every output ever shown (the trace keeps each output in full, clipped
// only at maxOutputKept).
const (
	keepResults    = 10
	oldResultBytes = 1 << 10
)

// conversation is the conversation to send: the messages, older tool
// results clipped.
func (l *loop) conversation() []llm.Message {
	if len(l.results) <= keepResults {
		return l.messages
	}
	msgs := slices.Clone(l.messages)
	for _, i := range l.results[:len(l.results)-keepResults] {
		if len(msgs[i].Content) > oldResultBytes {
			msgs[i].Content = clipText(msgs[i].Content, oldResultBytes) + "\n[an older result, shortened: run the call again to see it whole]"
		}
	}
	return msgs
}

// idle counts a reply that ran nothing; too many in a row end the run.
func (l *loop) idle() *ending {
	l.prose++
	if l.prose >= maxProse {
		return &ending{status: StatusFailed, reason: fmt.Sprintf("the model sent %d replies in a row that called no tool", l.prose)}
	}
	return nil
}

// say adds a user message.
func (l *loop) say(text string) {
	l.messages = append(l.messages, llm.Message{Role: llm.User, Content: text})
}

// answerAll answers every native call with text (calls written as text:
// one user message).
func (l *loop) answerAll(calls []llm.ToolCall, textual bool, text string) {
	if textual || len(calls) == 0 {
		l.say(text)
		return
	}
	for _, c := range calls {
		l.messages = append(l.messages, llm.Message{Role: llm.ToolRole, ToolCallID: c.ID, Content: text})
	}
}

// assistantMessage is the reply as it goes back into the conversation:
// its text only when its calls were text (they are in it).
func assistantMessage(reply llm.Reply, textual bool) llm.Message {
	if textual {
		return llm.Message{Role: llm.Assistant, Content: reply.Text}
	}
	return llm.Message{Role: llm.Assistant, Content: reply.Text, ToolCalls: reply.ToolCalls}
}

// calls returns the tool calls of a reply: the native ones, or those
// written as text, in text mode or when a model offered native tools
// wrote its calls in its text instead (as an OpenAI-compatible server
// without a tool-call parser passes them on: Qwen's <tool_call> tags, a
// JSON object). textual says the calls were text, so their results go
// back as a user message (no native ID to answer). bad explains text
// that looked like a call and could not be read.
func (l *loop) calls(reply llm.Reply) (calls []llm.ToolCall, textual bool, bad string) {
	if len(reply.ToolCalls) > 0 && !l.cfg.TextMode {
		return reply.ToolCalls, false, ""
	}
	calls, bad = textCalls(reply.Text)
	for i := range calls {
		l.textIDs++
		calls[i].ID = fmt.Sprintf("text_%d", l.textIDs)
	}
	return calls, true, bad
}

// textResults is the user message answering the calls of a text-mode
// reply.
func textResults(calls []llm.ToolCall, results []string, bad string) string {
	var b strings.Builder
	for i, r := range results {
		fmt.Fprintf(&b, "Result of call %d (%s):\n%s\n\n", i+1, calls[i].Name, r)
	}
	if bad != "" {
		b.WriteString(bad + "\n\n")
	}
	b.WriteString("Send the next tool call, or submit when the change is done.")
	return b.String()
}

// checkRepeat detects a model that loops: the same call with the same
// result. At loopWarnAt times the result carries a warning; one more
// repeat after the warning ends the run.
func (l *loop) checkRepeat(c llm.ToolCall, o toolOutcome) toolOutcome {
	key := fingerprint(c, o.out)
	l.repeats[key]++
	n := l.repeats[key]
	switch {
	case l.warned[key]:
		return toolOutcome{out: o.out, end: &ending{status: StatusLooping, reason: fmt.Sprintf("the model made the same %s call with the same result %d times, after a warning", c.Name, n)}}
	case n >= loopWarnAt:
		l.warned[key] = true
		warn := fmt.Sprintf(loopNote, n)
		l.note(warn)
		o.out += "\n\n" + warn
	}
	return o
}

// fingerprint identifies a call and its result: the tool, its arguments
// in canonical JSON (so spacing and key order do not matter) and the
// output's digest.
func fingerprint(c llm.ToolCall, out string) string {
	args := string(c.Arguments)
	var v any
	if json.Unmarshal(c.Arguments, &v) == nil {
		if b, err := json.Marshal(v); err == nil {
			args = string(b)
		}
	}
	sum := sha256.Sum256([]byte(c.Name + "\x00" + args + "\x00" + out))
	return string(sum[:])
}

// millis is d in milliseconds.
func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
