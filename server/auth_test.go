package server

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
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
