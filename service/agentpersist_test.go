package service

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/store"
)

// TestEventBudget: what an agent run writes of its events is bounded:
// output to its first keepOutput bytes (cut as feed.dropOutput cuts
// it), other events to a number and a size, the result always.
func TestEventBudget(t *testing.T) {
	step := func(id int64, msg string) Event {
		return Event{ID: id, Kind: EventStep, Agent: &api.AgentEvent{Step: &api.AgentStep{Kind: "model", Attempt: 1, Message: msg}}}
	}
	out := func(id int64, s string) Event { return Event{ID: id, Kind: EventStdout, Output: sandbox.Data(s)} }
	result := Event{ID: 99, Kind: EventResult, Agent: &api.AgentEvent{Run: &api.AgentRun{ID: "agt_1", Status: "answered"}}}
	stepBytes := func(msg string) int { row, _ := eventRow(step(1, msg)); return len(row.Data) }
	for _, tc := range []struct {
		name   string
		budget eventBudget
		events []Event
		want   []string // kind:id[:output] of the rows taken
	}{
		{"output within the budget", eventBudget{output: 10, events: 5, bytes: 1 << 10},
			[]Event{out(5, "hello"), out(9, "abcd")}, []string{"stdout:5:hello", "stdout:9:abcd"}},
		{"output cut at the budget, its ID where the cut is", eventBudget{output: 7, events: 5, bytes: 1 << 10},
			[]Event{out(5, "hello"), out(10, "world"), out(12, "!!")}, []string{"stdout:5:hello", "stdout:7:wo"}},
		{"no output for an agent run", eventBudget{output: 0, events: 5, bytes: 1 << 10},
			[]Event{step(1, "a"), out(6, "hello"), step(7, "b")}, []string{"step:1", "step:7"}},
		{"events beyond the number left out, the result kept", eventBudget{events: 2, bytes: 1 << 10},
			[]Event{step(1, "a"), step(2, "b"), step(3, "c"), result}, []string{"step:1", "step:2", "result:99"}},
		{"events beyond the bytes left out, smaller ones kept", eventBudget{events: 10, bytes: stepBytes("a") + stepBytes("b")},
			[]Event{step(1, "a"), step(2, strings.Repeat("x", 100)), step(3, "b"), step(4, "c"), result}, []string{"step:1", "step:3", "result:99"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.budget
			var got []string
			for _, e := range tc.events {
				row, ok := b.take(e)
				if !ok {
					continue
				}
				s := row.Kind + ":" + strconv.FormatInt(row.ID, 10)
				if e.Output != nil {
					back, err := eventOf(row)
					if err != nil {
						t.Fatal(err)
					}
					s += ":" + string(back.Output)
				}
				got = append(got, s)
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("taken %q, want %q", got, tc.want)
			}
		})
	}
}

// countingStore counts the writes of agent runs.
type countingStore struct {
	store.Store
	saves atomic.Int64
}

func (c *countingStore) SaveAgentRun(ctx context.Context, tenant, id string, rec *store.AgentRunRecord, events []store.AgentRunEvent) error {
	c.saves.Add(1)
	return c.Store.SaveAgentRun(ctx, tenant, id, rec, events)
}

// TestPersistChattyRun: a run that publishes many events and much
// output writes them in a few batches, not one write an event, and
// what the store holds stays within the bounds; its result is the last
// event, at the position the feed gives it next.
func TestPersistChattyRun(t *testing.T) {
	for _, tc := range []struct {
		name       string
		keepOutput int
		steps      int
		stepBytes  int
	}{
		{"agent run: many small steps, much output", 0, 2 * maxStoredAgentEvents, 10},
		{"question: large steps, much output", maxQuestionReplayOutput, 4000, 4 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "crucible.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			cs := &countingStore{Store: st}
			red, err := policy.NewRedactor(policy.DefaultRedactConfig())
			if err != nil {
				t.Fatal(err)
			}
			s := &Service{cfg: Config{Store: cs, Redactor: red}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			run := &agentRun{s: s, id: "agt_chatty", tenant: "acme", feed: newFeed("acme"), keepOutput: tc.keepOutput,
				info: api.AgentRun{ID: "agt_chatty", Status: api.AgentRunning, CreatedAt: storedTime()}}
			run.persist = s.newPersister(run)
			started := run.snapshot(false)
			run.publish(EventAgentRun, api.AgentEvent{Run: &started})
			run.persist.start()
			msg := strings.Repeat("m", tc.stepBytes)
			chunk := []byte(strings.Repeat("o", 1000) + "\n")
			began := time.Now()
			for i := range tc.steps {
				if i%64 == 0 {
					time.Sleep(10 * time.Millisecond) // a run that goes on for a while: batches are written as it goes
				}
				run.publish(EventStep, api.AgentEvent{Step: &api.AgentStep{Kind: "model", Attempt: 1, Message: msg}})
				run.feed.publish(Event{Kind: EventKind([]sandbox.Stream{sandbox.StreamStdout, sandbox.StreamStderr}[i%2]), Output: chunk})
			}
			end := run.finish(nil, errors.New("the test ends it"))
			run.feed.dropOutput(run.keepOutput)
			run.persist.last(end)
			run.publish(EventResult, api.AgentEvent{Run: &end})

			took := time.Since(began)
			// At most one write a batch, a batch every agentPersistDelay,
			// besides the first, the end and the result; at least one
			// batch while it went on, when it went on for four delays.
			n := cs.saves.Load()
			least := int64(3)
			if took >= 4*agentPersistDelay {
				least = 4
			}
			if most := int64(took/agentPersistDelay) + 4; n > most || n < least {
				t.Errorf("%d writes for %d events in %v: want them batched, between %d and %d", n, 2*tc.steps, took, least, most)
			}
			rows, err := st.AgentRunEvents(context.Background(), "acme", "agt_chatty", 0)
			if err != nil {
				t.Fatal(err)
			}
			var events, bytes, output int
			for _, r := range rows {
				switch r.Kind {
				case string(EventStdout), string(EventStderr):
					e, err := eventOf(r)
					if err != nil {
						t.Fatal(err)
					}
					output += len(e.Output)
				case string(EventResult):
				default:
					events++
					bytes += len(r.Data)
				}
			}
			if events > maxStoredAgentEvents || bytes > maxStoredAgentEventBytes || output != tc.keepOutput {
				t.Errorf("stored %d events (%d bytes) and %d bytes of output; want at most %d events, %d bytes, and %d bytes of output",
					events, bytes, output, maxStoredAgentEvents, maxStoredAgentEventBytes, tc.keepOutput)
			}
			t.Logf("%d events published in %v, %d writes, %d stored (%d of them output, %d bytes)", 2*tc.steps+2, took.Round(time.Millisecond), n, len(rows), len(rows)-events-1, output)
			last, _ := run.feed.position()
			if r := rows[len(rows)-1]; r.Kind != string(EventResult) || r.ID != last {
				t.Errorf("the last stored event is %s %d, want the result at %d", r.Kind, r.ID, last)
			}
		})
	}
}
