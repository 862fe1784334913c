package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"time"

	idgen "github.com/crucible-sandbox/crucible/ids"
)

// APIKey is a key that callers of the HTTP API present to act as a tenant.
// Only the SHA-256 of the secret is stored: a copy of the database does not
// let anyone call the API.
type APIKey struct {
	// ID names the key in listings and for revocation; it is not secret.
	ID string `json:"id"`
	// Tenant is who the key acts as.
	Tenant string `json:"tenant"`
	// Name is a free label, such as "ci" or "alice's laptop".
	Name string `json:"name"`
	// Hash is the hex SHA-256 of the secret (HashAPIKey).
	Hash string `json:"-"`
	// CreatedAt is when the key was created.
	CreatedAt time.Time `json:"created_at"`
	// RevokedAt is when the key was revoked; nil while it is valid.
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// apiKeyPrefix starts every secret, so that a leaked one is recognisable.
const apiKeyPrefix = "crk_"

// e2bKeyPrefix starts the secrets of KeyE2B.
const e2bKeyPrefix = "e2b_"

// tenantRE is what a tenant name may be: short, lower-case, safe in URLs,
// logs and metric labels.
var tenantRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// ValidTenant reports whether name is a valid tenant name: 1 to 63
// characters of a-z, 0-9, '_' and '-', starting with a letter or digit.
func ValidTenant(name string) bool { return tenantRE.MatchString(name) }

// NewAPIKey returns a new secret for tenant and the key to store for it
// (with Store.CreateKey). The secret is shown once to whoever created it;
// it has 256 random bits, so a fast hash is enough to store it (no
// password-style stretching is needed against guessing).
func NewAPIKey(tenant, name string) (secret string, key *APIKey, err error) {
	return NewAPIKeyOf(KeyCrucible, tenant, name)
}

// KeyForm is the shape of a key's secret. Every form is stored and looked
// up the same way (HashAPIKey), so a key of any form works wherever a key
// is asked for.
type KeyForm int

// The forms of a secret.
const (
	// KeyCrucible is "crk_" and 43 characters of unpadded base64url:
	// Crucible's own form.
	KeyCrucible KeyForm = iota
	// KeyE2B is "e2b_" and 64 lower-case hex digits, the shape E2B's SDKs
	// expect of E2B_API_KEY (they check it against ^e2b_[0-9a-f]+$), for
	// the E2B-compatible API (package e2bapi).
	KeyE2B
)

// NewAPIKeyOf is NewAPIKey with a secret of the given form; each form
// holds 256 random bits.
func NewAPIKeyOf(form KeyForm, tenant, name string) (secret string, key *APIKey, err error) {
	if !ValidTenant(tenant) {
		return "", nil, fmt.Errorf("store: tenant %q: must be 1-63 characters of a-z, 0-9, '_' or '-', starting with a letter or digit", tenant)
	}
	if len(name) > 200 {
		return "", nil, fmt.Errorf("store: key name: must be at most 200 bytes, got %d", len(name))
	}
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	switch form {
	case KeyCrucible:
		secret = apiKeyPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	case KeyE2B:
		secret = e2bKeyPrefix + hex.EncodeToString(b[:])
	default:
		return "", nil, fmt.Errorf("store: key form %d: must be KeyCrucible or KeyE2B", form)
	}
	return secret, &APIKey{ID: idgen.New(idgen.APIKey), Tenant: tenant, Name: name, Hash: HashAPIKey(secret)}, nil
}

// HashAPIKey returns the hex SHA-256 of secret, the form keys are stored
// and looked up in.
func HashAPIKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

func (s *sqlStore) CreateKey(ctx context.Context, k *APIKey) error {
	if !ValidTenant(k.Tenant) {
		return fmt.Errorf("store: create key: invalid tenant %q", k.Tenant)
	}
	if k.ID == "" || k.Hash == "" {
		return errors.New("store: create key: needs an ID and a hash (use NewAPIKey)")
	}
	if k.CreatedAt.IsZero() {
		k.CreatedAt = s.now()
	}
	k.CreatedAt = *normalizeTime(&k.CreatedAt)
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO api_keys (id, tenant, name, hash, created_at, revoked_at)
		VALUES (?, ?, ?, ?, ?, ?)`), k.ID, k.Tenant, k.Name, k.Hash, k.CreatedAt.UnixMicro(), micros(k.RevokedAt))
	if err != nil {
		return fmt.Errorf("store: create key %s: %w", k.ID, err)
	}
	return nil
}

const keyColumns = `id, tenant, name, hash, created_at, revoked_at`

func scanKey(row interface{ Scan(...any) error }) (*APIKey, error) {
	var k APIKey
	var created int64
	var revoked sql.NullInt64
	if err := row.Scan(&k.ID, &k.Tenant, &k.Name, &k.Hash, &created, &revoked); err != nil {
		return nil, err
	}
	k.CreatedAt = time.UnixMicro(created).UTC()
	k.RevokedAt = fromMicros(revoked)
	return &k, nil
}

func (s *sqlStore) KeyByHash(ctx context.Context, hash string) (*APIKey, error) {
	k, err := scanKey(s.db.QueryRowContext(ctx, s.q(`SELECT `+keyColumns+` FROM api_keys
		WHERE hash = ? AND revoked_at IS NULL`), hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: look up key: %w", err)
	}
	return k, nil
}

func (s *sqlStore) ListKeys(ctx context.Context) ([]APIKey, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+keyColumns+` FROM api_keys ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("store: list keys: %w", err)
	}
	defer rows.Close()
	var keys []APIKey
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list keys: %w", err)
		}
		keys = append(keys, *k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list keys: %w", err)
	}
	return keys, nil
}

func (s *sqlStore) RevokeKey(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?`),
		s.now().UnixMicro(), id)
	if err != nil {
		return fmt.Errorf("store: revoke key %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("store: revoke key %s: %w", id, err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

func (s *sqlStore) ActiveKeys(ctx context.Context) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM api_keys WHERE revoked_at IS NULL`).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: count keys: %w", err)
	}
	return n, nil
}
