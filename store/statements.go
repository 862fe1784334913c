package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// statements are the queries on a run's path (create, update, read, cache
// lookup), prepared once when the store opens: parsing them anew for every
// call costs a third of an update in the pure-Go SQLite.
type statements struct {
	createRun, updateRun, getRun, cacheGet *sql.Stmt
}

func (s *sqlStore) prepare(ctx context.Context) error {
	for _, p := range []struct {
		into  **sql.Stmt
		query string
	}{
		{&s.stmts.createRun, `INSERT INTO runs (` + runColumns + `)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&s.stmts.updateRun, `UPDATE runs SET ` + updateColumns + ` WHERE tenant = ? AND id = ? AND status <> 'lost'`},
		{&s.stmts.getRun, `SELECT ` + runColumns + ` FROM runs WHERE tenant = ? AND id = ?`},
		{&s.stmts.cacheGet, `SELECT run_id, expires_at FROM run_cache WHERE tenant = ? AND cache_key = ?`},
	} {
		stmt, err := s.db.PrepareContext(ctx, s.q(p.query))
		if err != nil {
			return errors.Join(fmt.Errorf("store: prepare: %w", err), s.stmts.close())
		}
		*p.into = stmt
	}
	return nil
}

// close closes the statements that were prepared.
func (st *statements) close() error {
	var errs []error
	for _, stmt := range []*sql.Stmt{st.createRun, st.updateRun, st.getRun, st.cacheGet} {
		if stmt != nil {
			errs = append(errs, stmt.Close())
		}
	}
	return errors.Join(errs...)
}
