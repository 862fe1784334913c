package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // registers the "sqlite" database/sql driver

	"github.com/crucible-sandbox/crucible/api"
	idgen "github.com/crucible-sandbox/crucible/ids"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// dialect holds what differs between the backends.
type dialect struct {
	// numbered is set when placeholders are $1, $2, ... instead of ?.
	numbered bool
	// bytesType is the column type of binary data.
	bytesType string
	// migrationLock, when set, is run first in the migration transaction to
	// serialize concurrent migrations.
	migrationLock string
}

var (
	sqliteDialect = dialect{bytesType: "BLOB"}
	// The advisory lock's key is an arbitrary constant: "crucible" in ASCII.
	postgresDialect = dialect{numbered: true, bytesType: "BYTEA", migrationLock: `SELECT pg_advisory_xact_lock(7165064483209421669)`}
)

// sqliteBusyTimeoutMS is how long a SQLite writer waits for another one.
const sqliteBusyTimeoutMS = 10_000

func openSQLite(ctx context.Context, path string) (Store, error) {
	if path == "" {
		return nil, errors.New(`store: "sqlite:" needs a path, such as "sqlite:/var/lib/crucible/crucible.db"`)
	}
	if strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("store: SQLite path %q must not contain '?'", path)
	}
	memory := path == ":memory:"
	if !memory {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
	}
	// Every connection gets the busy timeout and WAL mode. _txlock=immediate
	// makes transactions take the write lock at BEGIN, so two of them cannot
	// deadlock upgrading their locks, which a busy timeout cannot resolve.
	dsn := path + "?_pragma=busy_timeout(" + strconv.Itoa(sqliteBusyTimeoutMS) + ")" +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open SQLite %s: %w", path, err)
	}
	if memory {
		// Each connection to ":memory:" is a database of its own.
		db.SetMaxOpenConns(1)
	}
	return newSQLStore(ctx, db, sqliteDialect)
}

func openPostgres(ctx context.Context, url string) (Store, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, fmt.Errorf("store: open PostgreSQL: %w", err)
	}
	return newSQLStore(ctx, db, postgresDialect)
}

func newSQLStore(ctx context.Context, db *sql.DB, d dialect) (Store, error) {
	s := &sqlStore{db: db, dialect: d, now: time.Now}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.prepare(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// sqlStore is the Store of both backends.
type sqlStore struct {
	db      *sql.DB
	dialect dialect
	stmts   statements
	// now is the clock; tests replace it.
	now func() time.Time
}

// q rewrites a query's ? placeholders for the dialect. Queries in this
// package have no ? inside string literals.
func (s *sqlStore) q(query string) string {
	if !s.dialect.numbered {
		return query
	}
	var b strings.Builder
	n := 0
	for _, c := range query {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

const runColumns = `id, tenant, language, code_hash, code, image_digest, limits, status,
	exit_code, signal, reason, metrics, stdout, stderr, stdout_truncated, stderr_truncated,
	error, artifacts, cache_hit, redactions, session_id, agent_run, image, network, code_policy, node, created_at, started_at, finished_at`

// updateColumns are the columns Update sets, in runArgs order after the
// first two (id, tenant) and before the last three (timestamps).
const updateColumns = `language = ?, code_hash = ?, code = ?, image_digest = ?, limits = ?, status = ?,
	exit_code = ?, signal = ?, reason = ?, metrics = ?, stdout = ?, stderr = ?, stdout_truncated = ?,
	stderr_truncated = ?, error = ?, artifacts = ?, cache_hit = ?, redactions = ?,
	session_id = ?, agent_run = ?, image = ?, network = ?, code_policy = ?, node = ?, started_at = ?, finished_at = ?`

func (s *sqlStore) Create(ctx context.Context, r *api.Run) error {
	if r.ID == "" {
		r.ID = NewID()
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = s.now()
	}
	if r.Status == "" {
		r.Status = api.StatusQueued
	}
	args, err := runArgs(r)
	if err != nil {
		return err
	}
	_, err = s.stmts.createRun.ExecContext(ctx, args...)
	if err != nil {
		return fmt.Errorf("store: create run %s: %w", r.ID, err)
	}
	return nil
}

func (s *sqlStore) Update(ctx context.Context, r *api.Run) error {
	args, err := runArgs(r)
	if err != nil {
		return err
	}
	// args are id, tenant, the updated columns, created_at, started_at and
	// finished_at; the SET list skips id, tenant and created_at.
	cols := args[2:]
	set := make([]any, 0, len(cols)+1)
	set = append(set, cols[:len(cols)-3]...)
	set = append(set, cols[len(cols)-2:]...)
	set = append(set, r.Tenant, r.ID)
	res, err := s.stmts.updateRun.ExecContext(ctx, set...)
	if err != nil {
		return fmt.Errorf("store: update run %s: %w", r.ID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("store: update run %s: %w", r.ID, err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

func (s *sqlStore) Get(ctx context.Context, tenant, id string) (*api.Run, error) {
	row := s.stmts.getRun.QueryRowContext(ctx, tenant, id)
	r, err := scanRun(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: get run %s: %w", id, err)
	}
	return r, nil
}

func (s *sqlStore) List(ctx context.Context, tenant string, f Filter) ([]api.Run, string, error) {
	limit := f.Limit
	switch {
	case limit <= 0:
		limit = DefaultLimit
	case limit > MaxLimit:
		limit = MaxLimit
	}
	where := []string{"tenant = ?"}
	args := []any{tenant}
	if f.Status != "" {
		where = append(where, "status = ?")
		args = append(args, string(f.Status))
	}
	if f.Language != "" {
		where = append(where, "language = ?")
		args = append(args, string(f.Language))
	}
	if f.SessionID != "" {
		where = append(where, "session_id = ?")
		args = append(args, f.SessionID)
	}
	if f.AgentRun != "" {
		where = append(where, "agent_run = ?")
		args = append(args, f.AgentRun)
	}
	if !f.Since.IsZero() {
		where = append(where, "created_at >= ?")
		args = append(args, f.Since.UnixMicro())
	}
	if f.Cursor != "" {
		at, id, err := decodeCursor(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		where = append(where, "(created_at < ? OR (created_at = ? AND id < ?))")
		args = append(args, at, at, id)
	}
	query := `SELECT ` + runColumns + ` FROM runs WHERE ` + strings.Join(where, " AND ") +
		` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, limit+1)
	rows, err := s.db.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, "", fmt.Errorf("store: list runs: %w", err)
	}
	defer rows.Close()
	var runs []api.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, "", fmt.Errorf("store: list runs: %w", err)
		}
		runs = append(runs, *r)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("store: list runs: %w", err)
	}
	runs, next := page(runs, limit, func(r api.Run) (time.Time, string) { return r.CreatedAt, r.ID })
	return runs, next, nil
}

// page cuts list, read with one row more than limit, to limit rows, and
// returns the cursor of the page after it ("" when list was the last),
// from the last row's creation time and ID (key): the paging of every
// list of the store.
func page[T any](list []T, limit int, key func(T) (time.Time, string)) ([]T, string) {
	if len(list) <= limit {
		return list, ""
	}
	list = list[:limit]
	created, id := key(list[limit-1])
	return list, encodeCursor(created.UnixMicro(), id)
}

// interruptedReason is the Reason MarkInterrupted gives the runs it ends.
const interruptedReason = "the server stopped before the run finished"

func (s *sqlStore) MarkInterrupted(ctx context.Context) (int, error) {
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE runs SET status = ?, reason = ?, finished_at = ?
		WHERE status IN (?, ?)`),
		string(api.StatusInterrupted), interruptedReason, s.now().UnixMicro(),
		string(api.StatusQueued), string(api.StatusRunning))
	if err != nil {
		return 0, fmt.Errorf("store: mark interrupted: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("store: mark interrupted: %w", err)
	}
	return int(n), nil
}

func (s *sqlStore) CacheGet(ctx context.Context, tenant, key string) (*api.Run, bool, error) {
	var runID string
	var expires int64
	err := s.stmts.cacheGet.QueryRowContext(ctx, tenant, key).Scan(&runID, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("store: cache get: %w", err)
	}
	if now := s.now().UnixMicro(); expires <= now {
		return nil, false, s.deleteExpired(ctx, now)
	}
	r, err := s.Get(ctx, tenant, runID)
	if errors.Is(err, ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return r, true, nil
}

func (s *sqlStore) CachePut(ctx context.Context, tenant, key, runID string, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("store: cache put: ttl must be positive, got %v", ttl)
	}
	now := s.now().UnixMicro()
	if err := s.deleteExpired(ctx, now); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO run_cache (tenant, cache_key, run_id, expires_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (tenant, cache_key) DO UPDATE SET run_id = excluded.run_id, expires_at = excluded.expires_at`),
		tenant, key, runID, now+ttl.Microseconds())
	if err != nil {
		return fmt.Errorf("store: cache put: %w", err)
	}
	return nil
}

// deleteExpired deletes the cache entries of every tenant that expired at
// or before now (µs).
func (s *sqlStore) deleteExpired(ctx context.Context, now int64) error {
	if _, err := s.db.ExecContext(ctx, s.q(`DELETE FROM run_cache WHERE expires_at <= ?`), now); err != nil {
		return fmt.Errorf("store: cache cleanup: %w", err)
	}
	return nil
}

func (s *sqlStore) Close() error { return errors.Join(s.stmts.close(), s.db.Close()) }

// NewID returns a new random run ID (ids.Run), for a caller that needs
// the ID before Create.
func NewID() string { return idgen.New(idgen.Run) }

// runArgs validates r, normalizes its timestamps to what is stored, and
// returns the values of runColumns in order.
func runArgs(r *api.Run) ([]any, error) {
	if r.Tenant == "" {
		return nil, errors.New("store: run has no tenant")
	}
	if r.ID == "" {
		return nil, errors.New("store: run has no ID")
	}
	if !api.ValidStatus(r.Status) {
		return nil, fmt.Errorf("store: run %s has unknown status %q", r.ID, r.Status)
	}
	r.CreatedAt = time.UnixMicro(r.CreatedAt.UnixMicro()).UTC()
	r.StartedAt = normalizeTime(r.StartedAt)
	r.FinishedAt = normalizeTime(r.FinishedAt)
	limits, err := json.Marshal(r.Limits)
	if err != nil {
		return nil, fmt.Errorf("store: run %s: limits: %w", r.ID, err)
	}
	metrics, err := json.Marshal(r.Metrics)
	if err != nil {
		return nil, fmt.Errorf("store: run %s: metrics: %w", r.ID, err)
	}
	var execErr, artifacts any // NULL when absent
	if r.Error != nil {
		b, err := json.Marshal(r.Error)
		if err != nil {
			return nil, fmt.Errorf("store: run %s: error: %w", r.ID, err)
		}
		execErr = string(b)
	}
	if len(r.Artifacts) > 0 {
		b, err := json.Marshal(r.Artifacts)
		if err != nil {
			return nil, fmt.Errorf("store: run %s: artifacts: %w", r.ID, err)
		}
		artifacts = string(b)
	}
	var network any // NULL for a run without network
	if r.Network != nil {
		b, err := json.Marshal(r.Network)
		if err != nil {
			return nil, fmt.Errorf("store: run %s: network: %w", r.ID, err)
		}
		network = string(b)
	}
	var codePolicy any // NULL when no policy applied
	if r.Policy != nil || len(r.Findings) > 0 {
		b, err := json.Marshal(codePolicyColumn{Policy: r.Policy, Findings: r.Findings})
		if err != nil {
			return nil, fmt.Errorf("store: run %s: code policy: %w", r.ID, err)
		}
		codePolicy = string(b)
	}
	return []any{
		r.ID, r.Tenant, string(r.Language), r.CodeHash, r.Code, r.ImageDigest, string(limits), string(r.Status),
		r.ExitCode, r.Signal, r.Reason, string(metrics), nonNil(r.Stdout), nonNil(r.Stderr), r.StdoutTruncated, r.StderrTruncated,
		execErr, artifacts, r.CacheHit, r.Redactions, r.SessionID, r.AgentRun, r.Image, network, codePolicy, r.Node, r.CreatedAt.UnixMicro(), micros(r.StartedAt), micros(r.FinishedAt),
	}, nil
}

// codePolicyColumn is what the code_policy column holds, as JSON: the
// static code policy a run was checked under and its findings.
type codePolicyColumn struct {
	Policy   *sandbox.Policy   `json:"policy,omitempty"`
	Findings []sandbox.Finding `json:"findings,omitempty"`
}

// normalizeTime returns a new pointer to t in UTC truncated to the
// microsecond, or nil.
func normalizeTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	n := time.UnixMicro(t.UnixMicro()).UTC()
	return &n
}

// micros returns t as microseconds since the epoch, or nil (NULL).
func micros(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixMicro()
}

// nonNil returns b, or an empty slice for nil, since the stream columns are
// NOT NULL.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// scanRun reads one row of runColumns. Empty streams read back as nil.
func scanRun(row interface{ Scan(...any) error }) (*api.Run, error) {
	var (
		r                  api.Run
		language, status   string
		limits, metrics    string
		execErr, artifacts sql.NullString
		network            sql.NullString
		codePolicy         sql.NullString
		created            int64
		started, finished  sql.NullInt64
		stdout, stderr     []byte
	)
	err := row.Scan(&r.ID, &r.Tenant, &language, &r.CodeHash, &r.Code, &r.ImageDigest, &limits, &status,
		&r.ExitCode, &r.Signal, &r.Reason, &metrics, &stdout, &stderr, &r.StdoutTruncated, &r.StderrTruncated,
		&execErr, &artifacts, &r.CacheHit, &r.Redactions, &r.SessionID, &r.AgentRun, &r.Image, &network, &codePolicy, &r.Node, &created, &started, &finished)
	if err != nil {
		return nil, err
	}
	r.Language = sandbox.Language(language)
	r.Status = sandbox.Status(status)
	if len(stdout) > 0 {
		r.Stdout = stdout
	}
	if len(stderr) > 0 {
		r.Stderr = stderr
	}
	if err := json.Unmarshal([]byte(limits), &r.Limits); err != nil {
		return nil, fmt.Errorf("run %s: limits: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(metrics), &r.Metrics); err != nil {
		return nil, fmt.Errorf("run %s: metrics: %w", r.ID, err)
	}
	if execErr.Valid {
		r.Error = new(sandbox.ExecError)
		if err := json.Unmarshal([]byte(execErr.String), r.Error); err != nil {
			return nil, fmt.Errorf("run %s: error: %w", r.ID, err)
		}
	}
	if artifacts.Valid {
		if err := json.Unmarshal([]byte(artifacts.String), &r.Artifacts); err != nil {
			return nil, fmt.Errorf("run %s: artifacts: %w", r.ID, err)
		}
	}
	if network.Valid {
		r.Network = new(sandbox.NetworkLog)
		if err := json.Unmarshal([]byte(network.String), r.Network); err != nil {
			return nil, fmt.Errorf("run %s: network: %w", r.ID, err)
		}
	}
	if codePolicy.Valid {
		var cp codePolicyColumn
		if err := json.Unmarshal([]byte(codePolicy.String), &cp); err != nil {
			return nil, fmt.Errorf("run %s: code policy: %w", r.ID, err)
		}
		r.Policy, r.Findings = cp.Policy, cp.Findings
	}
	r.CreatedAt = time.UnixMicro(created).UTC()
	r.StartedAt = fromMicros(started)
	r.FinishedAt = fromMicros(finished)
	return &r, nil
}

func fromMicros(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := time.UnixMicro(v.Int64).UTC()
	return &t
}

// A cursor is the (created_at, id) of the last run of a page, opaque to
// callers: base64url of "MICROS:ID".
func encodeCursor(createdAt int64, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(createdAt, 10) + ":" + id))
}

func decodeCursor(c string) (int64, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", ErrBadCursor
	}
	at, id, ok := strings.Cut(string(b), ":")
	if !ok || id == "" {
		return 0, "", ErrBadCursor
	}
	micros, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return 0, "", ErrBadCursor
	}
	return micros, id, nil
}
