package analyst

import (
	"github.com/crucible-sandbox/crucible/agent"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// EventKind names what an Event reports.
type EventKind string

// The kinds of Event, in the order a question usually goes through them.
const (
	// EventModel: the model is asked for its next step.
	EventModel EventKind = "model"
	// EventCode: Code is about to run (after approval, if asked).
	EventCode EventKind = "code"
	// EventOutput: a chunk of the running code's output (Stream, Text).
	EventOutput EventKind = "output"
	// EventStatus: the code ended with Status (Message: why, if not ok).
	EventStatus EventKind = "status"
	// EventRetry: the attempt failed and the model is told why (Message).
	EventRetry EventKind = "retry"
	// EventVerify: the verifier checks the answer (Message).
	EventVerify EventKind = "verify"
	// EventAnswer: the question is done (Answer, whatever its status).
	EventAnswer EventKind = "answer"
)

// Event is progress reported while a question is answered. Text, Code
// and Message can hold what the model or the program wrote: a display
// must treat them as untrusted.
type Event struct {
	Kind EventKind `json:"kind"`
	// Attempt numbers the attempt, from 1, as the agent counts them.
	Attempt int    `json:"attempt,omitempty"`
	Message string `json:"message,omitempty"`
	// Code is the code of an EventCode.
	Code string `json:"code,omitempty"`
	// Stream and Text are an EventOutput's chunk.
	Stream sandbox.Stream `json:"stream,omitempty"`
	Text   string         `json:"text,omitempty"`
	// Status is an EventStatus's.
	Status sandbox.Status `json:"status,omitempty"`
	// Result is an EventStatus's whole result, without the analyst's own
	// records among its artifacts; not part of the JSON.
	Result *sandbox.Result `json:"-"`
	// Answer is an EventAnswer's.
	Answer *Answer `json:"answer,omitempty"`
}

// agentEvent is the Event of an agent's progress, and whether it has one:
// the agent's own execution events are left out, the session reports the
// code, its output and its status itself.
func agentEvent(e agent.Event) (Event, bool) {
	kind, ok := map[agent.StepKind]EventKind{
		agent.StepModel:    EventModel,
		agent.StepFeedback: EventRetry,
		agent.StepVerify:   EventVerify,
	}[e.Kind]
	return Event{Kind: kind, Attempt: e.Attempt, Message: e.Message}, ok
}
