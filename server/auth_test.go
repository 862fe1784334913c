package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/e2bapi"
	"github.com/crucible-sandbox/crucible/store"
)

// TestAuthenticatorRevocation: a revoked key stops working once the cache
// of key lookups expires, and revoking the last key reopens a loopback
// server to the default tenant only when keys are not required.
func TestAuthenticatorRevocation(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "keys.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	secret, key, _ := store.NewAPIKey("acme", "t")
	if err := st.CreateKey(ctx, key); err != nil {
		t.Fatal(err)
	}
	for _, required := range []bool{false, true} {
		a := newAuthenticator(st, required)
		a.ttl = 50 * time.Millisecond
		req := func(header string) (string, *api.Error) {
			r, _ := http.NewRequest("GET", "/v1/runs", nil)
			if header != "" {
				r.Header.Set("Authorization", header)
			}
			tenant, apiErr, err := a.tenant(r)
			if err != nil {
				t.Fatal(err)
			}
			return tenant, apiErr
		}
		if tenant, e := req("Bearer " + secret); tenant != "acme" || e != nil {
			t.Fatalf("valid key: %q, %v", tenant, e)
		}
		if _, e := req(""); e != errKeyRequired {
			t.Fatalf("no key while one exists: %v", e)
		}
		if err := st.RevokeKey(ctx, key.ID); err != nil {
			t.Fatal(err)
		}
		time.Sleep(60 * time.Millisecond)
		if _, e := req("Bearer " + secret); e != errKeyInvalid {
			t.Errorf("revoked key after the cache expired: %v", e)
		}
		tenant, e := req("")
		if required && e != errKeyRequired {
			t.Errorf("required, no key left: %q, %v; want 401", tenant, e)
		}
		if !required && (tenant != DefaultTenant || e != nil) {
			t.Errorf("not required, no key left: %q, %v; want the default tenant", tenant, e)
		}
		secret, key, _ = store.NewAPIKey("acme", "t")
		if err := st.CreateKey(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
}

// TestE2BTenant: an E2B SDK's X-API-Key follows the rules of Bearer keys:
// with no key stored and keys not required, anything (the SDKs insist on
// some key) is the default tenant; when keys are required, or once one
// exists, the key must be valid, of either form, and a refusal is
// e2bapi.ErrUnauthorized.
func TestE2BTenant(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "keys.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, tc := range []struct {
		required bool
		key      string
		want     string // "" for a refusal
	}{
		{false, "", DefaultTenant},
		{false, "e2b_whatever", DefaultTenant},
		{true, "", ""},
		{true, "e2b_whatever", ""},
	} {
		tenant, err := newAuthenticator(st, tc.required).e2bTenant(ctx, tc.key)
		if tenant != tc.want || (tc.want == "") != errors.Is(err, e2bapi.ErrUnauthorized) {
			t.Errorf("no keys, required %v, key %q: %q, %v; want %q", tc.required, tc.key, tenant, err, tc.want)
		}
	}
	e2bSecret, k1, _ := store.NewAPIKeyOf(store.KeyE2B, "acme", "sdk")
	crkSecret, k2, _ := store.NewAPIKeyOf(store.KeyCrucible, "beta", "")
	for _, k := range []*store.APIKey{k1, k2} {
		if err := st.CreateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	a := newAuthenticator(st, false)
	for _, tc := range []struct{ key, want string }{
		{e2bSecret, "acme"}, {crkSecret, "beta"}, {"", ""}, {"e2b_whatever", ""},
	} {
		tenant, err := a.e2bTenant(ctx, tc.key)
		if tenant != tc.want || (tc.want == "") != errors.Is(err, e2bapi.ErrUnauthorized) {
			t.Errorf("with keys, key %q: %q, %v; want %q", cutKey(tc.key), tenant, err, tc.want)
		}
	}
}

// cutKey shortens a secret for a message.
func cutKey(s string) string { return s[:min(len(s), 8)] }

// unreachableStore is a store that cannot be reached for a read of keys,
// as one across a partition: each read waits for its context to end
// (hung), or fails to connect (refused).
type unreachableStore struct {
	store.Store
	refused bool
}

func (u unreachableStore) read(ctx context.Context) error {
	if u.refused {
		return fmt.Errorf("store: look up key: failed to connect: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.EHOSTUNREACH})
	}
	<-ctx.Done()
	return ctx.Err()
}

func (u unreachableStore) KeyByHash(ctx context.Context, _ string) (*store.APIKey, error) {
	return nil, u.read(ctx)
}

func (u unreachableStore) ActiveKeys(ctx context.Context) (int, error) { return 0, u.read(ctx) }

// TestAuthenticatorStoreUnreachable: while the store cannot be reached (a
// cluster node cut off from Postgres), authenticating a request, with a
// key or without, ends within the bound as a 503 unavailable that says
// why: not a hang until TCP gives up, nor a 500.
func TestAuthenticatorStoreUnreachable(t *testing.T) {
	for _, tc := range []struct {
		header  string
		refused bool
		why     string
	}{
		{"Bearer crk_whatever", false, "it did not answer within 50ms"},
		{"", false, "it did not answer within 50ms"},
		{"Bearer crk_whatever", true, "the network failed"},
		{"", true, "the network failed"},
	} {
		a := newAuthenticator(unreachableStore{refused: tc.refused}, true)
		a.wait = 50 * time.Millisecond
		r, _ := http.NewRequest("GET", "/v1/runs", nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		done := make(chan error, 1)
		go func() {
			_, apiErr, err := a.tenant(r)
			if apiErr != nil {
				err = fmt.Errorf("%d %s: %s", api.HTTPStatus(apiErr.Code), apiErr.Code, apiErr.Message)
			}
			done <- err
		}()
		select {
		case err := <-done:
			if e := answerOf(err); e == nil || e.Code != api.CodeUnavailable || !strings.Contains(e.Message, "the store cannot be reached ("+tc.why+")") {
				t.Errorf("header %q, refused %v: %v, want 503 unavailable saying %q", tc.header, tc.refused, err, tc.why)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("header %q, the store hung: still authenticating 5s later, want 503 within 50ms", tc.header)
		}
	}
}
