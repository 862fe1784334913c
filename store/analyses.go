package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// AnalysisStore keeps data analyses, so that they outlive the server's
// process: each with its datasets (their bytes), profile and image, its
// conversation (each question with the agent run that answered it, the
// answer as the API gives it, and the answer's charts and files with
// their bytes), and the code of the cells that built its session's state,
// in order, so that a new session can be brought to the same state.
// Reads are scoped to a tenant: another tenant's analysis is ErrNotFound,
// as a missing one. The caller bounds what it writes (the service's
// upload, conversation and cell bounds); the store keeps what it is given.
type AnalysisStore interface {
	// CreateAnalysis stores a new analysis with its datasets' contents. It
	// fills a zero CreatedAt and normalizes it to what is stored.
	CreateAnalysis(ctx context.Context, a *Analysis) error
	// GetAnalysis returns the tenant's analysis id, its datasets named but
	// without their contents, or ErrNotFound.
	GetAnalysis(ctx context.Context, tenant, id string) (*Analysis, error)
	// AnalysisDatasets returns the datasets of the tenant's analysis id,
	// in order, with their contents; ErrNotFound when there is no such
	// analysis.
	AnalysisDatasets(ctx context.Context, tenant, id string) ([]AnalysisDataset, error)
	// ListAnalyses returns the tenant's analyses, newest first (by
	// creation time, then ID, both descending), one page of at most limit
	// (DefaultLimit when zero or negative, at most MaxLimit) at a time,
	// without their profiles; next is the cursor of the following page, ""
	// after the last, and ErrBadCursor a cursor it did not give.
	ListAnalyses(ctx context.Context, tenant string, limit int, cursor string) (list []Analysis, next string, err error)
	// AddAnalysisQuestion stores question q of the tenant's analysis id,
	// the contents of its answer's charts and files (those whose content
	// was kept), and the cells that ran while it was answered
	// (AnalysisCells), all or nothing; it
	// then forgets the analysis's questions numbered keep or more below
	// q.N, with their files. ErrNotFound when there is no such analysis
	// (deleted meanwhile: nothing is written).
	AddAnalysisQuestion(ctx context.Context, tenant, id string, q *AnalysisQuestion, files []sandbox.Artifact, cells AnalysisCells, keep int) error
	// AddAnalysisCells stores cells that ran in the tenant's analysis id
	// outside its questions, as AddAnalysisQuestion stores a question's.
	// ErrNotFound when there is no such analysis.
	AddAnalysisCells(ctx context.Context, tenant, id string, cells AnalysisCells) error
	// AnalysisQuestions returns the stored questions of the tenant's
	// analysis id, oldest first; ErrNotFound when there is no such
	// analysis.
	AnalysisQuestions(ctx context.Context, tenant, id string) ([]AnalysisQuestion, error)
	// AnalysisFile returns the chart or file called name of the answer to
	// question n of the tenant's analysis id, or with n 0 of the latest
	// answer that has one so called; its Content is set unless it was
	// omitted or withheld. ErrNotFound when there is none.
	AnalysisFile(ctx context.Context, tenant, id string, n int, name string) (sandbox.Artifact, error)
	// AnalysisCells returns the code of the cells that built the session
	// state of the tenant's analysis id, in the order they ran.
	AnalysisCells(ctx context.Context, tenant, id string) ([]string, error)
	// MarkAnalysisRebuilt records that the analysis's session was rebuilt
	// at at by replaying cells cells. ErrNotFound when there is none.
	MarkAnalysisRebuilt(ctx context.Context, tenant, id string, at time.Time, cells int) error
	// DeleteAnalysis deletes the tenant's analysis id and everything of
	// it: datasets, questions, files, cells. ErrNotFound when there is
	// none.
	DeleteAnalysis(ctx context.Context, tenant, id string) error
}

// Analysis is a stored data analysis.
type Analysis struct {
	// ID names it; Tenant owns it.
	ID, Tenant string
	// Image and Limits are those of its session.
	Image  string
	Limits sandbox.Limits
	// Datasets are its datasets in order; their Content only from
	// AnalysisDatasets.
	Datasets []AnalysisDataset
	// Profile is the datasets' profile as JSON, ProfileText as text, both
	// redacted by the caller.
	Profile     json.RawMessage
	ProfileText string
	CreatedAt   time.Time
	// Questions counts the questions stored so far (the number of the
	// latest).
	Questions int
	// Cells and CellBytes count the stored cells and their code's bytes.
	Cells     int
	CellBytes int64
	// Replayable is false once its cells could not all be kept
	// (AnalysisCells.Overflow): its session's state can no longer be
	// rebuilt.
	Replayable bool
	// RebuiltAt is when its session was last rebuilt, RebuiltCells from
	// how many cells; nil if never.
	RebuiltAt    *time.Time
	RebuiltCells int
}

// AnalysisDataset is a dataset of an analysis: its name and its bytes.
type AnalysisDataset struct {
	Name    string
	Content []byte
}

// AnalysisQuestion is a stored question of an analysis.
type AnalysisQuestion struct {
	// N numbers it in its analysis, from 1.
	N int
	// Question is its text; RunID names the agent run that answered it.
	Question, RunID string
	// Run is that agent run as the API describes it (without its trace),
	// Answer the answer as the API gives it (charts and files without
	// contents); both JSON, redacted by the caller. Answer is nil when
	// there was none.
	Run, Answer json.RawMessage
	CreatedAt   time.Time
}

// AnalysisCells are cells that ran in an analysis's session and
// succeeded (a question's programs, or cells a client ran there), in the
// order they ran.
type AnalysisCells struct {
	// Reset drops the cells stored before these: the session's
	// interpreter restarted, and what they built is gone.
	Reset bool
	// Code are the cells' programs.
	Code []string
	// Overflow says the cells exceed the caller's bound: none of them is
	// stored and the analysis is no longer Replayable.
	Overflow bool
}

const analysisColumns = `id, tenant, image, limits, datasets, profile, profile_text, created_at,
	questions, cells, cell_bytes, replayable, rebuilt_at, rebuilt_cells`

// analysisListColumns are analysisColumns with empty profiles: a listing
// does not read them (a profile's JSON may be megabytes).
const analysisListColumns = `id, tenant, image, limits, datasets, '', '', created_at,
	questions, cells, cell_bytes, replayable, rebuilt_at, rebuilt_cells`

func (s *sqlStore) CreateAnalysis(ctx context.Context, a *Analysis) (err error) {
	if a.CreatedAt.IsZero() {
		a.CreatedAt = s.now()
	}
	a.CreatedAt = *normalizeTime(&a.CreatedAt)
	limits, err := json.Marshal(a.Limits)
	if err != nil {
		return fmt.Errorf("store: create analysis %s: %w", a.ID, err)
	}
	names := make([]string, len(a.Datasets))
	for i, d := range a.Datasets {
		names[i] = d.Name
	}
	datasets, err := json.Marshal(names)
	if err != nil {
		return fmt.Errorf("store: create analysis %s: %w", a.ID, err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: create analysis %s: %w", a.ID, err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO analyses (`+analysisColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		a.ID, a.Tenant, a.Image, string(limits), string(datasets), string(a.Profile), a.ProfileText, a.CreatedAt.UnixMicro(),
		a.Questions, a.Cells, a.CellBytes, a.Replayable, micros(a.RebuiltAt), a.RebuiltCells); err != nil {
		return fmt.Errorf("store: create analysis %s: %w", a.ID, err)
	}
	for i, d := range a.Datasets {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO analysis_datasets (tenant, analysis_id, seq, name, content)
			VALUES (?, ?, ?, ?, ?)`), a.Tenant, a.ID, i, d.Name, nonNil(d.Content)); err != nil {
			return fmt.Errorf("store: create analysis %s: dataset %s: %w", a.ID, d.Name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: create analysis %s: %w", a.ID, err)
	}
	return nil
}

func (s *sqlStore) GetAnalysis(ctx context.Context, tenant, id string) (*Analysis, error) {
	a, err := scanAnalysis(s.db.QueryRowContext(ctx, s.q(`SELECT `+analysisColumns+` FROM analyses WHERE tenant = ? AND id = ?`), tenant, id), true)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: get analysis %s: %w", id, err)
	}
	return a, nil
}

// scanAnalysis reads a row of analysisColumns (with profile) or
// analysisListColumns.
func scanAnalysis(row interface{ Scan(...any) error }, profile bool) (*Analysis, error) {
	var a Analysis
	var limits, datasets, prof string
	var created int64
	var rebuilt sql.NullInt64
	if err := row.Scan(&a.ID, &a.Tenant, &a.Image, &limits, &datasets, &prof, &a.ProfileText, &created,
		&a.Questions, &a.Cells, &a.CellBytes, &a.Replayable, &rebuilt, &a.RebuiltCells); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(limits), &a.Limits); err != nil {
		return nil, fmt.Errorf("limits: %w", err)
	}
	var names []string
	if err := json.Unmarshal([]byte(datasets), &names); err != nil {
		return nil, fmt.Errorf("datasets: %w", err)
	}
	for _, n := range names {
		a.Datasets = append(a.Datasets, AnalysisDataset{Name: n})
	}
	if profile {
		a.Profile = json.RawMessage(prof)
	}
	a.CreatedAt = time.UnixMicro(created).UTC()
	a.RebuiltAt = fromMicros(rebuilt)
	return &a, nil
}

func (s *sqlStore) AnalysisDatasets(ctx context.Context, tenant, id string) ([]AnalysisDataset, error) {
	if err := s.analysisExists(ctx, s.db, tenant, id); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT name, content FROM analysis_datasets
		WHERE tenant = ? AND analysis_id = ? ORDER BY seq`), tenant, id)
	if err != nil {
		return nil, fmt.Errorf("store: datasets of analysis %s: %w", id, err)
	}
	defer rows.Close()
	var out []AnalysisDataset
	for rows.Next() {
		var d AnalysisDataset
		if err := rows.Scan(&d.Name, &d.Content); err != nil {
			return nil, fmt.Errorf("store: datasets of analysis %s: %w", id, err)
		}
		d.Content = nonNil(d.Content)
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: datasets of analysis %s: %w", id, err)
	}
	return out, nil
}

// querier is what a *sql.DB and a *sql.Tx share.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// analysisExists is nil when tenant has the analysis id, ErrNotFound
// when not.
func (s *sqlStore) analysisExists(ctx context.Context, q querier, tenant, id string) error {
	var one int
	err := q.QueryRowContext(ctx, s.q(`SELECT 1 FROM analyses WHERE tenant = ? AND id = ?`), tenant, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("store: analysis %s: %w", id, err)
	}
	return nil
}

func (s *sqlStore) ListAnalyses(ctx context.Context, tenant string, limit int, cursor string) ([]Analysis, string, error) {
	switch {
	case limit <= 0:
		limit = DefaultLimit
	case limit > MaxLimit:
		limit = MaxLimit
	}
	where, args := "tenant = ?", []any{tenant}
	if cursor != "" {
		at, id, err := decodeCursor(cursor)
		if err != nil {
			return nil, "", err
		}
		where += " AND (created_at < ? OR (created_at = ? AND id < ?))"
		args = append(args, at, at, id)
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT `+analysisListColumns+` FROM analyses WHERE `+where+
		` ORDER BY created_at DESC, id DESC LIMIT ?`), append(args, limit+1)...)
	if err != nil {
		return nil, "", fmt.Errorf("store: list analyses: %w", err)
	}
	defer rows.Close()
	var list []Analysis
	for rows.Next() {
		a, err := scanAnalysis(rows, false)
		if err != nil {
			return nil, "", fmt.Errorf("store: list analyses: %w", err)
		}
		list = append(list, *a)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("store: list analyses: %w", err)
	}
	list, next := page(list, limit, func(a Analysis) (time.Time, string) { return a.CreatedAt, a.ID })
	return list, next, nil
}

func (s *sqlStore) AddAnalysisQuestion(ctx context.Context, tenant, id string, q *AnalysisQuestion, files []sandbox.Artifact, cells AnalysisCells, keep int) error {
	if q.CreatedAt.IsZero() {
		q.CreatedAt = s.now()
	}
	q.CreatedAt = *normalizeTime(&q.CreatedAt)
	return s.inAnalysis(ctx, tenant, id, fmt.Sprintf("add question %d of analysis %s", q.N, id), func(exec execFunc) error {
		var answer any // NULL without one
		if q.Answer != nil {
			answer = string(q.Answer)
		}
		if err := exec("question", `INSERT INTO analysis_questions (tenant, analysis_id, n, question, run_id, run, answer, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, tenant, id, q.N, q.Question, q.RunID, string(q.Run), answer, q.CreatedAt.UnixMicro()); err != nil {
			return err
		}
		for _, f := range files {
			content := f.Content
			if f.ContentOmitted || f.Withheld != "" {
				content = nil
			}
			if err := exec("file "+f.Name, `INSERT INTO analysis_files (tenant, analysis_id, n, name, mime, size, sha256, withheld, omitted, content)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, tenant, id, q.N, f.Name, f.MIME, f.Size, f.SHA256, f.Withheld, f.ContentOmitted, nonNil(content)); err != nil {
				return err
			}
		}
		if err := s.addCells(ctx, exec, tenant, id, q.N, cells); err != nil {
			return err
		}
		if err := exec("count", `UPDATE analyses SET questions = ? WHERE tenant = ? AND id = ?`, q.N, tenant, id); err != nil {
			return err
		}
		if keep > 0 {
			for _, table := range []string{"analysis_questions", "analysis_files"} {
				if err := exec("forget", `DELETE FROM `+table+` WHERE tenant = ? AND analysis_id = ? AND n <= ?`, tenant, id, q.N-keep); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func (s *sqlStore) AddAnalysisCells(ctx context.Context, tenant, id string, cells AnalysisCells) error {
	return s.inAnalysis(ctx, tenant, id, "add cells to analysis "+id, func(exec execFunc) error {
		return s.addCells(ctx, exec, tenant, id, 0, cells)
	})
}

// execFunc runs a statement of a transaction; what names it in an error.
type execFunc func(what, query string, args ...any) error

// inAnalysis runs fn in a transaction that first locks the row of the
// tenant's analysis id (ErrNotFound when there is none), so that writes
// to one analysis follow each other; op names the work in errors.
func (s *sqlStore) inAnalysis(ctx context.Context, tenant, id, op string, fn func(exec execFunc) error) (err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	exec := func(what, query string, args ...any) error {
		if _, err := tx.ExecContext(ctx, s.q(query), args...); err != nil {
			return fmt.Errorf("store: %s: %s: %w", op, what, err)
		}
		return nil
	}
	// An update of the row takes its lock in both backends (SQLite's
	// transaction holds the database's write lock from its start).
	res, err := tx.ExecContext(ctx, s.q(`UPDATE analyses SET questions = questions WHERE tenant = ? AND id = ?`), tenant, id)
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	if err := oneRow(res, id); err != nil {
		return err
	}
	if err := fn(exec); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return nil
}

// addCells stores cells after the analysis's cells, as question n's (0:
// run outside a question), and counts them; see AnalysisCells.
func (s *sqlStore) addCells(ctx context.Context, exec execFunc, tenant, id string, n int, cells AnalysisCells) error {
	if cells.Reset {
		if err := exec("drop cells", `DELETE FROM analysis_cells WHERE tenant = ? AND analysis_id = ?`, tenant, id); err != nil {
			return err
		}
		if err := exec("reset", `UPDATE analyses SET cells = 0, cell_bytes = 0, replayable = ? WHERE tenant = ? AND id = ?`, true, tenant, id); err != nil {
			return err
		}
	}
	if cells.Overflow {
		return exec("overflow", `UPDATE analyses SET replayable = ? WHERE tenant = ? AND id = ?`, false, tenant, id)
	}
	for _, code := range cells.Code {
		if err := exec("cell", `INSERT INTO analysis_cells (tenant, analysis_id, seq, n, code)
			SELECT ?, ?, cells, ?, ? FROM analyses WHERE tenant = ? AND id = ?`, tenant, id, n, code, tenant, id); err != nil {
			return err
		}
		if err := exec("count", `UPDATE analyses SET cells = cells + 1, cell_bytes = cell_bytes + ? WHERE tenant = ? AND id = ?`,
			len(code), tenant, id); err != nil {
			return err
		}
	}
	return nil
}

func (s *sqlStore) AnalysisQuestions(ctx context.Context, tenant, id string) ([]AnalysisQuestion, error) {
	if err := s.analysisExists(ctx, s.db, tenant, id); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT n, question, run_id, run, answer, created_at FROM analysis_questions
		WHERE tenant = ? AND analysis_id = ? ORDER BY n`), tenant, id)
	if err != nil {
		return nil, fmt.Errorf("store: questions of analysis %s: %w", id, err)
	}
	defer rows.Close()
	var out []AnalysisQuestion
	for rows.Next() {
		var q AnalysisQuestion
		var run string
		var answer sql.NullString
		var created int64
		if err := rows.Scan(&q.N, &q.Question, &q.RunID, &run, &answer, &created); err != nil {
			return nil, fmt.Errorf("store: questions of analysis %s: %w", id, err)
		}
		q.Run = json.RawMessage(run)
		if answer.Valid {
			q.Answer = json.RawMessage(answer.String)
		}
		q.CreatedAt = time.UnixMicro(created).UTC()
		out = append(out, q)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: questions of analysis %s: %w", id, err)
	}
	return out, nil
}

func (s *sqlStore) AnalysisFile(ctx context.Context, tenant, id string, n int, name string) (sandbox.Artifact, error) {
	where, args := "tenant = ? AND analysis_id = ? AND name = ?", []any{tenant, id, name}
	if n != 0 {
		where += " AND n = ?"
		args = append(args, n)
	}
	var f sandbox.Artifact
	var content []byte
	err := s.db.QueryRowContext(ctx, s.q(`SELECT name, mime, size, sha256, withheld, omitted, content FROM analysis_files
		WHERE `+where+` ORDER BY n DESC LIMIT 1`), args...).Scan(&f.Name, &f.MIME, &f.Size, &f.SHA256, &f.Withheld, &f.ContentOmitted, &content)
	if errors.Is(err, sql.ErrNoRows) {
		return f, ErrNotFound
	}
	if err != nil {
		return f, fmt.Errorf("store: file %s of analysis %s: %w", name, id, err)
	}
	if !f.ContentOmitted && f.Withheld == "" {
		f.Content = nonNil(content)
	}
	return f, nil
}

func (s *sqlStore) AnalysisCells(ctx context.Context, tenant, id string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT code FROM analysis_cells WHERE tenant = ? AND analysis_id = ? ORDER BY seq`), tenant, id)
	if err != nil {
		return nil, fmt.Errorf("store: cells of analysis %s: %w", id, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var code string
		if err := rows.Scan(&code); err != nil {
			return nil, fmt.Errorf("store: cells of analysis %s: %w", id, err)
		}
		out = append(out, code)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: cells of analysis %s: %w", id, err)
	}
	return out, nil
}

func (s *sqlStore) MarkAnalysisRebuilt(ctx context.Context, tenant, id string, at time.Time, cells int) error {
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE analyses SET rebuilt_at = ?, rebuilt_cells = ? WHERE tenant = ? AND id = ?`),
		micros(&at), cells, tenant, id)
	if err != nil {
		return fmt.Errorf("store: mark analysis %s rebuilt: %w", id, err)
	}
	return oneRow(res, id)
}

// oneRow is ErrNotFound when res changed no row.
func oneRow(res sql.Result, id string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("store: analysis %s: %w", id, err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

func (s *sqlStore) DeleteAnalysis(ctx context.Context, tenant, id string) (err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: delete analysis %s: %w", id, err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	res, err := tx.ExecContext(ctx, s.q(`DELETE FROM analyses WHERE tenant = ? AND id = ?`), tenant, id)
	if err != nil {
		return fmt.Errorf("store: delete analysis %s: %w", id, err)
	}
	if err := oneRow(res, id); err != nil {
		return err
	}
	for _, table := range analysisTables {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM `+table+` WHERE tenant = ? AND analysis_id = ?`), tenant, id); err != nil {
			return fmt.Errorf("store: delete analysis %s: %s: %w", id, table, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: delete analysis %s: %w", id, err)
	}
	return nil
}

// analysisTables hold an analysis's parts, each row under its analysis_id.
var analysisTables = []string{"analysis_datasets", "analysis_questions", "analysis_files", "analysis_cells"}

// analysesMigration is the schema of AnalysisStore (version 8).
var analysesMigration = migration{
	version: 8,
	name:    "analyses: datasets, conversation, files, cells",
	statements: []string{
		`CREATE TABLE analyses (
			id TEXT PRIMARY KEY,
			tenant TEXT NOT NULL,
			image TEXT NOT NULL,
			limits TEXT NOT NULL,
			datasets TEXT NOT NULL,
			profile TEXT NOT NULL,
			profile_text TEXT NOT NULL,
			created_at BIGINT NOT NULL,
			questions BIGINT NOT NULL,
			cells BIGINT NOT NULL,
			cell_bytes BIGINT NOT NULL,
			replayable BOOLEAN NOT NULL,
			rebuilt_at BIGINT,
			rebuilt_cells BIGINT NOT NULL
		)`,
		`CREATE INDEX analyses_tenant_created ON analyses (tenant, created_at DESC, id DESC)`,
		`CREATE TABLE analysis_datasets (
			tenant TEXT NOT NULL,
			analysis_id TEXT NOT NULL,
			seq BIGINT NOT NULL,
			name TEXT NOT NULL,
			content {bytes} NOT NULL,
			PRIMARY KEY (analysis_id, seq)
		)`,
		`CREATE TABLE analysis_questions (
			tenant TEXT NOT NULL,
			analysis_id TEXT NOT NULL,
			n BIGINT NOT NULL,
			question TEXT NOT NULL,
			run_id TEXT NOT NULL,
			run TEXT NOT NULL,
			answer TEXT,
			created_at BIGINT NOT NULL,
			PRIMARY KEY (analysis_id, n)
		)`,
		`CREATE TABLE analysis_files (
			tenant TEXT NOT NULL,
			analysis_id TEXT NOT NULL,
			n BIGINT NOT NULL,
			name TEXT NOT NULL,
			mime TEXT NOT NULL,
			size BIGINT NOT NULL,
			sha256 TEXT NOT NULL,
			withheld TEXT NOT NULL,
			omitted BOOLEAN NOT NULL,
			content {bytes} NOT NULL,
			PRIMARY KEY (analysis_id, n, name)
		)`,
		`CREATE TABLE analysis_cells (
			tenant TEXT NOT NULL,
			analysis_id TEXT NOT NULL,
			seq BIGINT NOT NULL,
			n BIGINT NOT NULL,
			code TEXT NOT NULL,
			PRIMARY KEY (analysis_id, seq)
		)`,
	},
}
