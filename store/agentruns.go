package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/crucible-sandbox/crucible/api"
)

// AgentRunStore keeps agent runs (the code agent's, and those that
// answer an analysis's questions), so that they outlive the process:
// each run's description as the API answers it, its trace, the approvals
// it asked for and the decisions on them, and the events of its stream
// with their IDs, so that a follower resumes by event ID from the store.
//
// The store keeps what it is given: the service bounds what a run writes
// (its trace, its events and their output) before it calls these.
type AgentRunStore interface {
	// SaveAgentRun writes, in one transaction, rec (unless it is nil) and
	// events, all of tenant's agent run id. rec replaces what is stored
	// under id (an upsert: saving it twice changes nothing), unless the
	// run stored under id is another tenant's, which is an error. An event
	// replaces the event of its run with its ID.
	SaveAgentRun(ctx context.Context, tenant, id string, rec *AgentRunRecord, events []AgentRunEvent) error
	// GetAgentRun returns tenant's agent run id, with its trace, or
	// ErrNotFound.
	GetAgentRun(ctx context.Context, tenant, id string) (*AgentRunRecord, error)
	// ListAgentRuns returns tenant's agent runs, newest first (by
	// creation time, then ID, both descending), without their traces, one
	// page at a time as List pages runs: next is the cursor of the
	// following page, "" after the last.
	ListAgentRuns(ctx context.Context, tenant string, f AgentRunFilter) (runs []api.AgentRun, next string, err error)
	// AgentRunEvents returns the events of tenant's agent run id whose ID
	// is above after, in ID order (none for another tenant's run).
	AgentRunEvents(ctx context.Context, tenant, id string, after int64) ([]AgentRunEvent, error)
	// UnfinishedAgentRuns returns the agent runs of every tenant that have
	// not ended (running, awaiting approval), with their traces: at
	// start, a server settles those a crash left behind.
	UnfinishedAgentRuns(ctx context.Context) ([]AgentRunRecord, error)
}

// AgentRunRecord is an agent run as the store keeps it.
type AgentRunRecord struct {
	// Tenant owns the run; GetAgentRun and UnfinishedAgentRuns fill it in.
	Tenant string
	// Run is the run as the API describes it, with its trace.
	Run api.AgentRun
	// Approvals are the approvals the run asked for, in order.
	Approvals []api.AgentApproval
	// Decisions are the decisions on them, in order.
	Decisions []api.AgentDecision
	// LastEvent is the ID of the run's last stored event, 0 without any;
	// filled in on reads, ignored on writes.
	LastEvent int64
	// Node is the cluster node that runs it ("" on a single host): a
	// node settles, at start, only its own unfinished runs, and those
	// of nodes that are down (agentRunNodeMigration).
	Node string
}

// AgentRunEvent is one stored event of an agent run's stream.
type AgentRunEvent struct {
	// ID is the event's position in its run's stream.
	ID int64
	// Kind names the event (service.EventKind).
	Kind string
	// Data is the event's data, a JSON document.
	Data json.RawMessage
}

// AgentRunFilter pages ListAgentRuns, as Filter's Limit and Cursor page
// List.
type AgentRunFilter struct {
	// Limit is the page size: DefaultLimit when zero or negative, at most
	// MaxLimit.
	Limit int
	// Cursor continues a listing: the next value of the previous page.
	Cursor string
}

// agentRunsMigration is schema version 7: the agent_runs table (one row
// a run: its columns for lookups and ordering, the rest as JSON) and
// agent_run_events (one row an event of a run's stream).
var agentRunsMigration = migration{
	version: 7,
	name:    "agent runs and their events",
	statements: []string{
		`CREATE TABLE agent_runs (
			id TEXT PRIMARY KEY,
			tenant TEXT NOT NULL,
			status TEXT NOT NULL,
			info TEXT NOT NULL,
			trace TEXT,
			approvals TEXT,
			decisions TEXT,
			created_at BIGINT NOT NULL,
			finished_at BIGINT
		)`,
		`CREATE INDEX agent_runs_tenant_created ON agent_runs (tenant, created_at DESC, id DESC)`,
		`CREATE INDEX agent_runs_status ON agent_runs (status)`,
		`CREATE TABLE agent_run_events (
			run_id TEXT NOT NULL,
			tenant TEXT NOT NULL,
			id BIGINT NOT NULL,
			kind TEXT NOT NULL,
			data TEXT NOT NULL,
			PRIMARY KEY (run_id, id)
		)`,
	},
}

// agentRunColumns are the columns GetAgentRun reads, and with the last
// one (the last event's ID) computed.
const agentRunColumns = `tenant, info, trace, approvals, decisions, node,
	(SELECT COALESCE(MAX(e.id), 0) FROM agent_run_events e WHERE e.run_id = agent_runs.id AND e.tenant = agent_runs.tenant)`

func (s *sqlStore) SaveAgentRun(ctx context.Context, tenant, id string, rec *AgentRunRecord, events []AgentRunEvent) (err error) {
	if tenant == "" || id == "" {
		return errors.New("store: save agent run: tenant and id must be set")
	}
	var args []any
	if rec != nil {
		if args, err = agentRunArgs(tenant, id, rec); err != nil {
			return err
		}
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: save agent run %s: %w", id, err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if rec != nil {
		res, err := tx.ExecContext(ctx, s.q(`INSERT INTO agent_runs (id, tenant, status, info, trace, approvals, decisions, created_at, finished_at, node)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET status = excluded.status, info = excluded.info, trace = excluded.trace,
				approvals = excluded.approvals, decisions = excluded.decisions, finished_at = excluded.finished_at
			WHERE agent_runs.tenant = excluded.tenant`), args...)
		if err != nil {
			return fmt.Errorf("store: save agent run %s: %w", id, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(fmt.Errorf("store: save agent run %s: the ID is another tenant's", id), err)
		}
	}
	if len(events) > 0 {
		stmt, err := tx.PrepareContext(ctx, s.q(`INSERT INTO agent_run_events (run_id, tenant, id, kind, data) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (run_id, id) DO UPDATE SET kind = excluded.kind, data = excluded.data
			WHERE agent_run_events.tenant = excluded.tenant`))
		if err != nil {
			return fmt.Errorf("store: save agent run %s: events: %w", id, err)
		}
		defer stmt.Close()
		for _, e := range events {
			if !json.Valid(e.Data) {
				return fmt.Errorf("store: save agent run %s: event %d: its data is not JSON", id, e.ID)
			}
			if _, err := stmt.ExecContext(ctx, id, tenant, e.ID, e.Kind, string(e.Data)); err != nil {
				return fmt.Errorf("store: save agent run %s: event %d: %w", id, e.ID, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: save agent run %s: %w", id, err)
	}
	return nil
}

// agentRunArgs validates rec and returns the values of an agent_runs row.
func agentRunArgs(tenant, id string, rec *AgentRunRecord) ([]any, error) {
	r := rec.Run
	switch {
	case r.ID != id:
		return nil, fmt.Errorf("store: save agent run %s: the record's ID is %q", id, r.ID)
	case r.Status == "":
		return nil, fmt.Errorf("store: save agent run %s: it has no status", id)
	case r.CreatedAt.IsZero():
		return nil, fmt.Errorf("store: save agent run %s: it has no creation time", id)
	}
	var trace any // NULL without one
	if len(r.Trace) > 0 {
		if !json.Valid(r.Trace) {
			return nil, fmt.Errorf("store: save agent run %s: its trace is not JSON", id)
		}
		trace = string(r.Trace)
	}
	r.Trace = nil
	r.CreatedAt = time.UnixMicro(r.CreatedAt.UnixMicro()).UTC()
	r.FinishedAt = normalizeTime(r.FinishedAt)
	info, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("store: save agent run %s: %w", id, err)
	}
	approvals, err := jsonOrNull(rec.Approvals)
	if err != nil {
		return nil, fmt.Errorf("store: save agent run %s: approvals: %w", id, err)
	}
	decisions, err := jsonOrNull(rec.Decisions)
	if err != nil {
		return nil, fmt.Errorf("store: save agent run %s: decisions: %w", id, err)
	}
	return []any{id, tenant, string(r.Status), string(info), trace, approvals, decisions,
		r.CreatedAt.UnixMicro(), micros(r.FinishedAt), rec.Node}, nil
}

// jsonOrNull returns a non-empty slice as JSON text, an empty one as nil
// (NULL).
func jsonOrNull[T any](v []T) (any, error) {
	if len(v) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

func (s *sqlStore) GetAgentRun(ctx context.Context, tenant, id string) (*AgentRunRecord, error) {
	row := s.db.QueryRowContext(ctx, s.q(`SELECT `+agentRunColumns+` FROM agent_runs WHERE tenant = ? AND id = ?`), tenant, id)
	rec, err := scanAgentRun(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: get agent run %s: %w", id, err)
	}
	return rec, nil
}

func (s *sqlStore) UnfinishedAgentRuns(ctx context.Context) ([]AgentRunRecord, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT `+agentRunColumns+` FROM agent_runs WHERE status IN (?, ?) ORDER BY created_at, id`),
		string(api.AgentRunning), string(api.AgentAwaitingApproval))
	if err != nil {
		return nil, fmt.Errorf("store: unfinished agent runs: %w", err)
	}
	defer rows.Close()
	var recs []AgentRunRecord
	for rows.Next() {
		rec, err := scanAgentRun(rows)
		if err != nil {
			return nil, fmt.Errorf("store: unfinished agent runs: %w", err)
		}
		recs = append(recs, *rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: unfinished agent runs: %w", err)
	}
	return recs, nil
}

// scanAgentRun reads one row of agentRunColumns.
func scanAgentRun(row interface{ Scan(...any) error }) (*AgentRunRecord, error) {
	var (
		rec                         AgentRunRecord
		info                        string
		trace, approvals, decisions sql.NullString
	)
	if err := row.Scan(&rec.Tenant, &info, &trace, &approvals, &decisions, &rec.Node, &rec.LastEvent); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(info), &rec.Run); err != nil {
		return nil, fmt.Errorf("info: %w", err)
	}
	if trace.Valid {
		rec.Run.Trace = json.RawMessage(trace.String)
	}
	if approvals.Valid {
		if err := json.Unmarshal([]byte(approvals.String), &rec.Approvals); err != nil {
			return nil, fmt.Errorf("agent run %s: approvals: %w", rec.Run.ID, err)
		}
	}
	if decisions.Valid {
		if err := json.Unmarshal([]byte(decisions.String), &rec.Decisions); err != nil {
			return nil, fmt.Errorf("agent run %s: decisions: %w", rec.Run.ID, err)
		}
	}
	return &rec, nil
}

func (s *sqlStore) ListAgentRuns(ctx context.Context, tenant string, f AgentRunFilter) ([]api.AgentRun, string, error) {
	limit := f.Limit
	switch {
	case limit <= 0:
		limit = DefaultLimit
	case limit > MaxLimit:
		limit = MaxLimit
	}
	where, args := "tenant = ?", []any{tenant}
	if f.Cursor != "" {
		at, id, err := decodeCursor(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		where += " AND (created_at < ? OR (created_at = ? AND id < ?))"
		args = append(args, at, at, id)
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT info FROM agent_runs WHERE `+where+` ORDER BY created_at DESC, id DESC LIMIT ?`),
		append(args, limit+1)...)
	if err != nil {
		return nil, "", fmt.Errorf("store: list agent runs: %w", err)
	}
	defer rows.Close()
	var runs []api.AgentRun
	for rows.Next() {
		var info string
		var r api.AgentRun
		if err := rows.Scan(&info); err != nil {
			return nil, "", fmt.Errorf("store: list agent runs: %w", err)
		}
		if err := json.Unmarshal([]byte(info), &r); err != nil {
			return nil, "", fmt.Errorf("store: list agent runs: %w", err)
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("store: list agent runs: %w", err)
	}
	runs, next := page(runs, limit, func(r api.AgentRun) (time.Time, string) { return r.CreatedAt, r.ID })
	return runs, next, nil
}

func (s *sqlStore) AgentRunEvents(ctx context.Context, tenant, id string, after int64) ([]AgentRunEvent, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id, kind, data FROM agent_run_events WHERE tenant = ? AND run_id = ? AND id > ? ORDER BY id`),
		tenant, id, after)
	if err != nil {
		return nil, fmt.Errorf("store: agent run %s: events: %w", id, err)
	}
	defer rows.Close()
	var events []AgentRunEvent
	for rows.Next() {
		var e AgentRunEvent
		var data string
		if err := rows.Scan(&e.ID, &e.Kind, &data); err != nil {
			return nil, fmt.Errorf("store: agent run %s: events: %w", id, err)
		}
		e.Data = json.RawMessage(data)
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: agent run %s: events: %w", id, err)
	}
	return events, nil
}
