package store

import (
	"context"
	"fmt"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// runNodesMigration adds the node that executes a run (cluster mode).
var runNodesMigration = migration{
	version: 9,
	name:    "runs name the node that executes them",
	statements: []string{
		`ALTER TABLE runs ADD COLUMN node TEXT NOT NULL DEFAULT ''`,
		`CREATE INDEX runs_status_node ON runs (status, node)`,
	},
}

// RunNodes are the queries of cluster mode, where nodes share the store
// and each run names the node that executes it (api.Run.Node).
type RunNodes interface {
	// MarkInterruptedOn is MarkInterrupted for node's runs only: a node
	// of a cluster settles, when it starts, the runs its previous process
	// left, never those other live nodes execute.
	MarkInterruptedOn(ctx context.Context, node string) (int, error)
	// MarkLost ends every run node left unfinished with api.StatusLost
	// and FinishedAt now, and returns how many it ended: those running
	// there (the reason LostReason(node)) and those it had kept to run
	// itself, still queued (LostBeforeStartReason(node): their request,
	// files and stdin, lived only in the node's memory, so no other node
	// can run them). The update is conditional (status running or
	// queued, node node): a run that ended meanwhile keeps its end. Runs
	// queued in the cluster's queue have no node until one claims them.
	MarkLost(ctx context.Context, node string) (int, error)
	// UnfinishedNodes returns the nodes that have runs running or kept
	// queued (MarkLost), in no order.
	UnfinishedNodes(ctx context.Context) ([]string, error)
	// Claim marks tenant's run id running on node since started, if it
	// is still queued, and reports whether it did: of the nodes a queued
	// run's message reaches, only the first claim wins, and a run its
	// front cancelled (EndQueued) is claimed by none.
	Claim(ctx context.Context, tenant, id, node string, started time.Time) (bool, error)
	// EndQueued ends tenant's run id with status and reason, if it is
	// still queued, and reports whether it did.
	EndQueued(ctx context.Context, tenant, id string, status sandbox.Status, reason string) (bool, error)
}

// LostReason is the reason of a run that node ran when it died.
func LostReason(node string) string {
	return fmt.Sprintf("lost: node %s, which ran it, died before it ended; it was not run again", node)
}

// LostBeforeStartReason is the reason of a run node had taken to run
// itself, queued behind its own slots, when it died.
func LostBeforeStartReason(node string) string {
	return fmt.Sprintf("lost: node %s, which had taken it, died before it started it; it did not run: send it again", node)
}

func (s *sqlStore) MarkInterruptedOn(ctx context.Context, node string) (int, error) {
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE runs SET status = ?, reason = ?, finished_at = ?
		WHERE status IN (?, ?) AND node = ?`),
		string(api.StatusInterrupted), interruptedReason, s.now().UnixMicro(),
		string(api.StatusQueued), string(api.StatusRunning), node)
	if err != nil {
		return 0, fmt.Errorf("store: mark node %s's runs interrupted: %w", node, err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

func (s *sqlStore) MarkLost(ctx context.Context, node string) (int, error) {
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE runs SET status = ?,
		reason = CASE WHEN status = ? THEN ? ELSE ? END, finished_at = ?
		WHERE status IN (?, ?) AND node = ?`),
		string(api.StatusLost), string(api.StatusRunning), LostReason(node), LostBeforeStartReason(node), s.now().UnixMicro(),
		string(api.StatusRunning), string(api.StatusQueued), node)
	if err != nil {
		return 0, fmt.Errorf("store: mark node %s's runs lost: %w", node, err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

func (s *sqlStore) UnfinishedNodes(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT DISTINCT node FROM runs WHERE status IN (?, ?) AND node <> ''`),
		string(api.StatusRunning), string(api.StatusQueued))
	if err != nil {
		return nil, fmt.Errorf("store: nodes with unfinished runs: %w", err)
	}
	defer rows.Close()
	var nodes []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("store: nodes with unfinished runs: %w", err)
		}
		nodes = append(nodes, n)
	}
	return nodes, rows.Err()
}

func (s *sqlStore) Claim(ctx context.Context, tenant, id, node string, started time.Time) (bool, error) {
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE runs SET status = ?, node = ?, started_at = ?
		WHERE tenant = ? AND id = ? AND status = ?`),
		string(api.StatusRunning), node, started.UnixMicro(), tenant, id, string(api.StatusQueued))
	if err != nil {
		return false, fmt.Errorf("store: claim run %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (s *sqlStore) EndQueued(ctx context.Context, tenant, id string, status sandbox.Status, reason string) (bool, error) {
	if !api.ValidStatus(status) {
		return false, fmt.Errorf("store: run %s: unknown status %q", id, status)
	}
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE runs SET status = ?, reason = ?, finished_at = ?
		WHERE tenant = ? AND id = ? AND status = ?`),
		string(status), reason, s.now().UnixMicro(), tenant, id, string(api.StatusQueued))
	if err != nil {
		return false, fmt.Errorf("store: end queued run %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
