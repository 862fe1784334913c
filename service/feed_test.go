package service

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// brief is an event as these tests compare it: "kind id output".
func brief(events []Event) []string {
	var s []string
	for _, e := range events {
		s = append(s, fmt.Sprintf("%s %d %s", e.Kind, e.ID, e.Output))
	}
	return s
}

// TestFeedIDs: a feed numbers its events by position, joins consecutive
// chunks of one stream, and a follower from any position gets exactly the
// rest, cut inside an event if need be.
func TestFeedIDs(t *testing.T) {
	f := newFeed("t")
	f.publish(Event{Kind: EventRun, Run: &api.RunAccepted{ID: "r"}})
	f.publish(Event{Kind: EventStdout, Output: sandbox.Data("ab")})
	f.publish(Event{Kind: EventStdout, Output: sandbox.Data("cd")}) // joined
	f.publish(Event{Kind: EventStdout, Output: sandbox.Data{}})     // dropped
	f.publish(Event{Kind: EventStderr, Output: sandbox.Data("e")})
	f.publish(Event{Kind: EventStdout, Output: sandbox.Data(strings.Repeat("x", maxEventOutput))}) // too big to join
	f.publish(Event{Kind: EventStdout, Output: sandbox.Data("y")})
	f.publish(Event{Kind: EventResult, Result: &api.RunResponse{ID: "r"}})
	f.end()
	big := strings.Repeat("x", maxEventOutput)
	all := []string{"run 1 ", "stdout 5 abcd", "stderr 6 e", fmt.Sprintf("stdout %d %s", 6+maxEventOutput, big),
		fmt.Sprintf("stdout %d y", 7+maxEventOutput), fmt.Sprintf("result %d ", 8+maxEventOutput)}
	for _, c := range []struct {
		after int64
		want  []string
	}{
		{0, all},
		{1, all[1:]},
		{3, append([]string{"stdout 5 cd"}, all[2:]...)},
		{5, all[2:]},
		{6 + maxEventOutput - 1, append([]string{fmt.Sprintf("stdout %d x", 6+maxEventOutput)}, all[4:]...)},
		{7 + maxEventOutput, all[5:]},
		{8 + maxEventOutput, nil},
	} {
		var got []Event
		f.follow(context.Background(), c.after, func(e Event) bool { got = append(got, e); return true })
		if b := brief(got); !reflect.DeepEqual(b, c.want) {
			t.Errorf("after %d: %q, want %q", c.after, b, c.want)
		}
	}
}

// TestReplayIDs: a finished run's record is replayed with the ids its
// feed gave (stdout before stderr), and after a position inside the
// output only what is certainly not seen.
func TestReplayIDs(t *testing.T) {
	resp := func(stdout, stderr string) api.RunResponse {
		return api.RunResponse{ID: "r", Result: sandbox.Result{Stdout: sandbox.Data(stdout), Stderr: sandbox.Data(stderr)}}
	}
	for _, c := range []struct {
		name  string
		resp  api.RunResponse
		after int64
		want  []string
	}{
		{"all", resp("abc", "de"), 0, []string{"run 1 ", "stdout 4 abc", "stderr 6 de", "result 7 "}},
		{"after the run event", resp("abc", "de"), 1, []string{"stdout 4 abc", "stderr 6 de", "result 7 "}},
		{"both streams, inside the output", resp("abc", "de"), 2, []string{"result 7 "}},
		{"both streams, after the output", resp("abc", "de"), 6, []string{"result 7 "}},
		{"after the result", resp("abc", "de"), 7, nil},
		{"beyond the result", resp("abc", "de"), 99, nil},
		{"stdout only, inside it", resp("abc", ""), 2, []string{"stdout 4 bc", "result 5 "}},
		{"stderr only, inside it", resp("", "de"), 2, []string{"stderr 3 e", "result 4 "}},
		{"no output", resp("", ""), 1, []string{"result 2 "}},
	} {
		if got := brief(replay(c.resp, c.after)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: after %d: %q, want %q", c.name, c.after, got, c.want)
		}
	}
}

// TestFeedDropOutput: once a run ended, its feed keeps the first keep
// bytes of its output (both streams, in order) and every other event with
// its ID; an output event cut keeps its start, its ID the end of what it
// kept, and a follower resuming inside the kept part gets the rest of it.
func TestFeedDropOutput(t *testing.T) {
	fill := func() *feed {
		f := newFeed("t")
		f.publish(Event{Kind: EventAgentRun, Agent: &api.AgentEvent{}})                   // 1
		f.publish(Event{Kind: EventStdout, Output: sandbox.Data("abcd")})                 // 5
		f.publish(Event{Kind: EventExecution, Agent: &api.AgentEvent{}})                  // 6
		f.publish(Event{Kind: EventStderr, Output: sandbox.Data("efg")})                  // 9
		f.publish(Event{Kind: EventStdout, Output: sandbox.Data("hi")})                   // 11
		f.publish(Event{Kind: EventResult, Agent: &api.AgentEvent{Run: &api.AgentRun{}}}) // 12
		f.end()
		return f
	}
	for _, c := range []struct {
		name  string
		keep  int
		after int64
		want  []string
	}{
		{"none kept", 0, 0, []string{"agent_run 1 ", "execution 6 ", "result 12 "}},
		{"all kept", 1 << 10, 0, []string{"agent_run 1 ", "stdout 5 abcd", "execution 6 ", "stderr 9 efg", "stdout 11 hi", "result 12 "}},
		{"cut inside an event", 6, 0, []string{"agent_run 1 ", "stdout 5 abcd", "execution 6 ", "stderr 8 ef", "result 12 "}},
		{"cut at an event's end", 7, 0, []string{"agent_run 1 ", "stdout 5 abcd", "execution 6 ", "stderr 9 efg", "result 12 "}},
		{"resumed inside the cut event", 6, 7, []string{"stderr 8 f", "result 12 "}},
		{"resumed past what was kept", 6, 9, []string{"result 12 "}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := fill()
			f.dropOutput(c.keep)
			var got []Event
			f.follow(context.Background(), c.after, func(e Event) bool { got = append(got, e); return true })
			if b := brief(got); !reflect.DeepEqual(b, c.want) {
				t.Errorf("dropOutput(%d), after %d: %q, want %q", c.keep, c.after, b, c.want)
			}
		})
	}
}
