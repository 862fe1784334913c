package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// migration is one versioned schema change. Its statements are written for
// both backends; {bytes} stands for the binary column type.
type migration struct {
	version    int
	name       string
	statements []string
}

// migrations are applied in order; a released one is never edited, only
// followed by a new version.
var migrations = []migration{
	{
		version: 1,
		name:    "runs and run_cache",
		statements: []string{
			`CREATE TABLE runs (
				id TEXT PRIMARY KEY,
				tenant TEXT NOT NULL,
				language TEXT NOT NULL,
				code_hash TEXT NOT NULL,
				code TEXT NOT NULL,
				image_digest TEXT NOT NULL,
				limits TEXT NOT NULL,
				status TEXT NOT NULL,
				exit_code BIGINT NOT NULL,
				signal TEXT NOT NULL,
				reason TEXT NOT NULL,
				metrics TEXT NOT NULL,
				stdout {bytes} NOT NULL,
				stderr {bytes} NOT NULL,
				stdout_truncated BOOLEAN NOT NULL,
				stderr_truncated BOOLEAN NOT NULL,
				error TEXT,
				artifacts TEXT,
				cache_hit BOOLEAN NOT NULL,
				redactions BIGINT NOT NULL,
				created_at BIGINT NOT NULL,
				started_at BIGINT,
				finished_at BIGINT
			)`,
			`CREATE INDEX runs_tenant_created ON runs (tenant, created_at DESC, id DESC)`,
			`CREATE INDEX runs_status ON runs (status)`,
			`CREATE TABLE run_cache (
				tenant TEXT NOT NULL,
				cache_key TEXT NOT NULL,
				run_id TEXT NOT NULL,
				expires_at BIGINT NOT NULL,
				PRIMARY KEY (tenant, cache_key)
			)`,
			`CREATE INDEX run_cache_expires ON run_cache (expires_at)`,
		},
	},
	{
		version: 2,
		name:    "api_keys and artifacts",
		statements: []string{
			`CREATE TABLE api_keys (
				id TEXT PRIMARY KEY,
				tenant TEXT NOT NULL,
				name TEXT NOT NULL,
				hash TEXT NOT NULL UNIQUE,
				created_at BIGINT NOT NULL,
				revoked_at BIGINT
			)`,
			`CREATE TABLE artifacts (
				tenant TEXT NOT NULL,
				run_id TEXT NOT NULL,
				name TEXT NOT NULL,
				mime TEXT NOT NULL,
				size BIGINT NOT NULL,
				sha256 TEXT NOT NULL,
				content {bytes} NOT NULL,
				PRIMARY KEY (tenant, run_id, name)
			)`,
		},
	},
	{
		version: 3,
		name:    "runs linked to sessions and agent runs",
		statements: []string{
			`ALTER TABLE runs ADD COLUMN session_id TEXT NOT NULL DEFAULT ''`,
			`ALTER TABLE runs ADD COLUMN agent_run TEXT NOT NULL DEFAULT ''`,
			`CREATE INDEX runs_tenant_agent_run ON runs (tenant, agent_run)`,
		},
	},
	{
		version: 4,
		name:    "runs name their image",
		statements: []string{
			`ALTER TABLE runs ADD COLUMN image TEXT NOT NULL DEFAULT ''`,
		},
	},
	{
		version: 5,
		name:    "runs log their network connections",
		statements: []string{
			`ALTER TABLE runs ADD COLUMN network TEXT`,
		},
	},
	{
		version: 6,
		name:    "runs keep their code policy and findings",
		statements: []string{
			`ALTER TABLE runs ADD COLUMN code_policy TEXT`,
		},
	},
	agentRunsMigration,
	analysesMigration,
	runNodesMigration,
	agentRunNodeMigration,
}

// migrate applies the migrations the database lacks, in one transaction.
func (s *sqlStore) migrate(ctx context.Context) (err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if s.dialect.migrationLock != "" {
		if _, err := tx.ExecContext(ctx, s.dialect.migrationLock); err != nil {
			return fmt.Errorf("store: migrate: lock: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version BIGINT PRIMARY KEY,
		name TEXT NOT NULL,
		applied_at BIGINT NOT NULL
	)`); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	applied, err := appliedVersions(ctx, tx)
	if err != nil {
		return err
	}
	for _, m := range migrations {
		if applied[m.version] {
			continue
		}
		for _, stmt := range m.statements {
			stmt = strings.ReplaceAll(stmt, "{bytes}", s.dialect.bytesType)
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("store: migration %d (%s): %w", m.version, m.name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`),
			m.version, m.name, s.now().UnixMicro()); err != nil {
			return fmt.Errorf("store: migration %d (%s): record: %w", m.version, m.name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: migrate: commit: %w", err)
	}
	return nil
}

func appliedVersions(ctx context.Context, tx *sql.Tx) (map[int]bool, error) {
	rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return nil, fmt.Errorf("store: migrate: %w", err)
	}
	defer rows.Close()
	applied := map[int]bool{}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("store: migrate: %w", err)
		}
		applied[v] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: migrate: %w", err)
	}
	return applied, nil
}
