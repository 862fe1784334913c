package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
)

func (s *sqlStore) PutArtifacts(ctx context.Context, tenant, runID string, as []sandbox.Artifact) (err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: put artifacts of %s: %w", runID, err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	for _, a := range as {
		if a.ContentOmitted {
			continue
		}
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO artifacts (tenant, run_id, name, mime, size, sha256, content)
			VALUES (?, ?, ?, ?, ?, ?, ?)`), tenant, runID, a.Name, a.MIME, a.Size, a.SHA256, nonNil(a.Content))
		if err != nil {
			return fmt.Errorf("store: put artifact %s of %s: %w", a.Name, runID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: put artifacts of %s: %w", runID, err)
	}
	return nil
}

func (s *sqlStore) GetArtifact(ctx context.Context, tenant, runID, name string) (*api.ArtifactMeta, []byte, error) {
	var m api.ArtifactMeta
	var content []byte
	err := s.db.QueryRowContext(ctx, s.q(`SELECT name, mime, size, sha256, content FROM artifacts
		WHERE tenant = ? AND run_id = ? AND name = ?`), tenant, runID, name).Scan(&m.Name, &m.MIME, &m.Size, &m.SHA256, &content)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, ErrNotFound
	}
	if err != nil {
		return nil, nil, fmt.Errorf("store: get artifact %s of %s: %w", name, runID, err)
	}
	return &m, nonNil(content), nil
}
