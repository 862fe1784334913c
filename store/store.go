// Package store keeps run records: what a tenant asked to run, how it went,
// and the result cache that maps a request's CacheKey to an earlier run.
//
// Two backends implement Store with the same behaviour and pass the same test
// suite:
//
//   - SQLite, the default: embedded, through the pure-Go driver
//     modernc.org/sqlite (no cgo), in WAL mode with a busy timeout so that
//     concurrent writers wait for each other instead of failing with
//     "database is locked".
//   - PostgreSQL, when Open is given a postgres:// or postgresql:// URL,
//     through github.com/jackc/pgx/v5's database/sql driver (pgx/v5/stdlib),
//     so that both backends share one database/sql implementation.
//
// Open applies the schema migrations that the database lacks, in one
// transaction that also records them in the schema_migrations table; opening
// an up-to-date database changes nothing. Concurrent Opens of one database
// apply them once: SQLite's transaction takes the write lock at its start and
// PostgreSQL's takes an advisory lock.
//
// Timestamps are stored as microseconds since the Unix epoch (UTC) in both
// backends, so a stored time reads back truncated to the microsecond, in UTC.
// Stdout and stderr are stored as given: the caller redacts them first.
package store

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// Filter selects the runs List returns. Zero fields select everything.
type Filter struct {
	// Status keeps only runs with this status.
	Status sandbox.Status
	// Language keeps only runs of this language.
	Language sandbox.Language
	// SessionID keeps only the cells of this session.
	SessionID string
	// AgentRun keeps only the executions of this agent run.
	AgentRun string
	// Since keeps only runs created at or after this time.
	Since time.Time
	// Limit is the page size: DefaultLimit when zero or negative, at most
	// MaxLimit.
	Limit int
	// Cursor continues a listing: the next value of the previous page.
	Cursor string
}

// Page sizes of List.
const (
	// DefaultLimit is the page size when Filter.Limit is not set.
	DefaultLimit = 50
	// MaxLimit is the largest page size; larger limits are lowered to it.
	MaxLimit = 500
)

// Errors the stores return; test for them with errors.Is.
var (
	// ErrNotFound: no run (key, artifact) has this ID for this tenant.
	// Another tenant's run is reported the same way as a missing one.
	ErrNotFound = errors.New("store: run not found")
	// ErrBadCursor: Filter.Cursor is not a cursor List returned.
	ErrBadCursor = errors.New("store: invalid cursor")
)

// Store keeps runs and the result cache. Every method is safe for concurrent
// use.
type Store interface {
	// Create stores a new run. It fills in an empty ID, a zero CreatedAt and
	// an empty Status (api.StatusQueued), and normalizes the run's timestamps to
	// what is stored (UTC, microseconds).
	Create(ctx context.Context, r *api.Run) error
	// Update replaces the stored run with r's ID and tenant, all but its ID,
	// Tenant and CreatedAt. It returns ErrNotFound when there is none, or
	// when it ended api.StatusLost: a run declared lost keeps that end (its
	// node was taken for dead; a late result of it is not written).
	Update(ctx context.Context, r *api.Run) error
	// Get returns the tenant's run with this ID, or ErrNotFound.
	Get(ctx context.Context, tenant, id string) (*api.Run, error)
	// List returns the tenant's runs that match f, newest first (by
	// creation time, then ID, both descending), one page at a time. next is
	// the cursor of the following page, "" after the last. Paging is stable:
	// runs created while paging never shift the pages that follow.
	List(ctx context.Context, tenant string, f Filter) (runs []api.Run, next string, err error)
	// MarkInterrupted ends every run still queued or running with
	// api.StatusInterrupted and FinishedAt now, and returns how many it ended.
	// A server calls it at start, before it accepts runs, to settle the
	// runs a crash left behind.
	MarkInterrupted(ctx context.Context) (int, error)
	RunNodes
	// CacheGet returns the run stored under the tenant's cache key, if the
	// entry exists, has not expired, and its run still exists. Expired
	// entries are misses and are deleted.
	CacheGet(ctx context.Context, tenant, key string) (*api.Run, bool, error)
	// CachePut stores runID under the tenant's cache key for ttl, replacing
	// any earlier entry, and deletes expired entries.
	CachePut(ctx context.Context, tenant, key, runID string, ttl time.Duration) error
	// PutArtifacts stores the contents of a run's artifacts, all or none;
	// artifacts whose content was omitted are skipped.
	PutArtifacts(ctx context.Context, tenant, runID string, as []sandbox.Artifact) error
	// GetArtifact returns the tenant's artifact called name of run runID,
	// or ErrNotFound.
	GetArtifact(ctx context.Context, tenant, runID, name string) (*api.ArtifactMeta, []byte, error)

	// CreateKey stores a new API key (see NewAPIKey), filling in a zero
	// CreatedAt.
	CreateKey(ctx context.Context, k *APIKey) error
	// KeyByHash returns the valid (not revoked) key with this hash, or
	// ErrNotFound.
	KeyByHash(ctx context.Context, hash string) (*APIKey, error)
	// ListKeys returns every key, revoked ones included, oldest first.
	ListKeys(ctx context.Context) ([]APIKey, error)
	// RevokeKey revokes the key with this ID; revoking a revoked key keeps
	// its first revocation time. It returns ErrNotFound when there is no
	// such key.
	RevokeKey(ctx context.Context, id string) error
	// ActiveKeys counts the keys that are not revoked.
	ActiveKeys(ctx context.Context) (int, error)

	AgentRunStore
	AnalysisStore

	// Close releases the database.
	Close() error
}

// DefaultSQLitePath is the database Open uses when given an empty URL.
const DefaultSQLitePath = "/var/lib/crucible/crucible.db"

// schemeRE matches a URL scheme prefix such as "postgres:" or "mysql:".
var schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// Open opens the store that url names and brings its schema up to date:
//
//   - "" is SQLite at DefaultSQLitePath;
//   - "sqlite:PATH" or a bare file path (one that does not start with a
//     URL scheme) is SQLite at PATH; ":memory:" is a private in-memory
//     database, for tests;
//   - "postgres://..." or "postgresql://..." is PostgreSQL, the URL passed
//     to pgx as it is.
//
// Any other scheme is an error. A SQLite database's directory is created when
// missing; its path may not contain '?'.
func Open(ctx context.Context, url string) (Store, error) {
	switch {
	case url == "":
		return openSQLite(ctx, DefaultSQLitePath)
	case strings.HasPrefix(url, "sqlite:"):
		return openSQLite(ctx, strings.TrimPrefix(url, "sqlite:"))
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return openPostgres(ctx, url)
	case schemeRE.MatchString(url):
		// Name only the scheme: the rest may hold a password.
		scheme := strings.ToLower(strings.TrimSuffix(schemeRE.FindString(url), ":"))
		return nil, fmt.Errorf(`store: unsupported database URL scheme %q: use "sqlite:PATH" or a file path for SQLite, or "postgres://..." / "postgresql://..." for PostgreSQL`, scheme)
	default:
		return openSQLite(ctx, url)
	}
}
