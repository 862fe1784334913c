package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/e2bapi"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

// DefaultTenant owns every run and session while no API key exists: a
// server without keys serves one tenant, on loopback only (the CLI
// enforces that).
const DefaultTenant = "default"

// keyCacheTTL is how long a key lookup is trusted. It bounds the store
// reads per request and is the delay before a revocation takes effect.
const keyCacheTTL = 5 * time.Second

// storeWait bounds each read of the store that authenticating a request
// makes. A node cut off from its store (a partition, in a cluster) would
// otherwise hold every request until TCP gives up on the connection,
// minutes later; it answers 503 instead, which tells the client to retry
// or to use another node.
const storeWait = 5 * time.Second

// maxCachedKeys bounds the key cache; when it is full it is emptied, so a
// flood of invalid keys cannot grow memory.
const maxCachedKeys = 10_000

var (
	errKeyRequired = unauthorized("an API key is required: send it as \"Authorization: Bearer crk_...\" (create one with `crucible key create`)",
		"is required: Bearer followed by an API key")
	errKeyInvalid = unauthorized("the API key is invalid or revoked", "must hold a valid API key")
	errKeyForm    = unauthorized("the Authorization header must be \"Bearer <API key>\"", "must be \"Bearer <API key>\"")
)

// unauthorized is a 401 about the Authorization header.
func unauthorized(message, rule string) *api.Error {
	e := newError(api.CodeUnauthorized, "%s", message)
	e.Field, e.Rule = "Authorization", rule
	return e
}

// authenticator maps API keys to tenants.
type authenticator struct {
	store store.Store
	// required makes a key mandatory even when none exists, for a server
	// listening beyond loopback: revoking the last key must not open it.
	required bool
	// ttl is how long answers of the store are trusted (keyCacheTTL).
	ttl time.Duration
	// wait bounds each read of the store (storeWait).
	wait time.Duration

	mu       sync.Mutex
	keys     map[string]cachedKey // by hash
	active   int                  // valid keys in the store, as of activeAt
	activeAt time.Time
}

type cachedKey struct {
	tenant  string // "" when the key is unknown or revoked
	expires time.Time
}

func newAuthenticator(st store.Store, required bool) *authenticator {
	return &authenticator{store: st, required: required, ttl: keyCacheTTL, wait: storeWait, keys: map[string]cachedKey{}}
}

// tenant returns the tenant r acts as. Without an Authorization header it
// is DefaultTenant as long as keys are neither required nor present.
func (a *authenticator) tenant(r *http.Request) (string, *api.Error, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		n, err := a.activeKeys(r.Context())
		if err != nil {
			return "", nil, err
		}
		if a.required || n > 0 {
			return "", errKeyRequired, nil
		}
		return DefaultTenant, nil, nil
	}
	scheme, secret, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || secret == "" {
		return "", errKeyForm, nil
	}
	tenant, err := a.lookup(r.Context(), store.HashAPIKey(strings.TrimSpace(secret)))
	if err != nil {
		return "", nil, err
	}
	if tenant == "" {
		return "", errKeyInvalid, nil
	}
	return tenant, nil, nil
}

// lookup returns the tenant of the key with this hash, "" if it is not a
// valid key; answers are cached for keyCacheTTL, misses included.
func (a *authenticator) lookup(ctx context.Context, hash string) (string, error) {
	now := time.Now()
	a.mu.Lock()
	c, ok := a.keys[hash]
	a.mu.Unlock()
	if ok && now.Before(c.expires) {
		return c.tenant, nil
	}
	var k *store.APIKey
	err := a.bounded(ctx, func(ctx context.Context) (err error) {
		k, err = a.store.KeyByHash(ctx, hash)
		return err
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		c = cachedKey{expires: now.Add(a.ttl)}
	case err != nil:
		return "", err
	default:
		c = cachedKey{tenant: k.Tenant, expires: now.Add(a.ttl)}
	}
	a.mu.Lock()
	if len(a.keys) >= maxCachedKeys {
		clear(a.keys)
	}
	a.keys[hash] = c
	a.mu.Unlock()
	return c.tenant, nil
}

// activeKeys counts the valid keys, re-reading the store at most every
// keyCacheTTL.
func (a *authenticator) activeKeys(ctx context.Context) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if time.Since(a.activeAt) < a.ttl {
		return a.active, nil
	}
	var n int
	err := a.bounded(ctx, func(ctx context.Context) (err error) {
		n, err = a.store.ActiveKeys(ctx)
		return err
	})
	if err != nil {
		return 0, err
	}
	a.active, a.activeAt = n, time.Now()
	return n, nil
}

// bounded calls read with ctx bounded by a.wait. A store that cannot be
// reached, whether the read timed out or the network failed, is refused
// as unavailable (503), not failed as internal: the client may retry or
// use another node.
func (a *authenticator) bounded(ctx context.Context, read func(context.Context) error) error {
	rctx, cancel := context.WithTimeout(ctx, a.wait)
	defer cancel()
	err := read(rctx)
	var netErr net.Error
	switch {
	case err == nil || ctx.Err() != nil:
		return err
	case errors.Is(rctx.Err(), context.DeadlineExceeded):
		return storeUnreachable(fmt.Sprintf("it did not answer within %v", a.wait))
	case errors.As(err, &netErr):
		return storeUnreachable("the network failed")
	}
	return err
}

// storeUnreachable is the refusal of a request whose key cannot be
// checked, for why.
func storeUnreachable(why string) error {
	return &service.Error{Kind: service.KindUnavailable,
		Message: "cannot check the API key: the store cannot be reached (" + why + "); retry, or use another node"}
}

// tenantKey is the context key of the request's tenant.
type tenantKey struct{}

// tenantOf returns the tenant the authenticated request r acts as.
func tenantOf(r *http.Request) string {
	t, _ := r.Context().Value(tenantKey{}).(string)
	return t
}

// e2bTenant returns the tenant an E2B SDK's X-API-Key acts as, for the
// E2B-compatible API (package e2bapi), by the rules of Bearer keys: while
// no key exists and keys are not required, every caller is DefaultTenant
// (E2B's SDKs refuse to run without some key, so whatever E2B_API_KEY
// holds is accepted then, as a missing Authorization header is); once one
// exists, or keys are required, the key must be a valid one, of any form
// (`crucible key create --e2b` makes one of the SDK's shape). A refusal
// is e2bapi.ErrUnauthorized.
func (a *authenticator) e2bTenant(ctx context.Context, key string) (string, error) {
	n, err := a.activeKeys(ctx)
	if err != nil {
		return "", err
	}
	if !a.required && n == 0 {
		return DefaultTenant, nil
	}
	if key == "" {
		return "", e2bapi.Unauthorized("an API key is required: set E2B_API_KEY to a key of this server (create one with `crucible key create --e2b --tenant NAME`)")
	}
	tenant, err := a.lookup(ctx, store.HashAPIKey(key))
	if err != nil {
		return "", err
	}
	if tenant == "" {
		return "", e2bapi.Unauthorized("the API key is invalid or revoked (E2B_API_KEY must be a key of this server: crucible key create --e2b --tenant NAME)")
	}
	return tenant, nil
}
