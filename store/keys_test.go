package store

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

func TestNewAPIKey(t *testing.T) {
	secret, k, err := NewAPIKey("acme", "ci")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, apiKeyPrefix) || len(secret) != len(apiKeyPrefix)+43 || k.Hash != HashAPIKey(secret) || strings.Contains(k.Hash, secret) {
		t.Errorf("secret %q, key %+v: want a crk_ secret stored only as its hash", secret, k)
	}
	other, _, _ := NewAPIKey("acme", "ci")
	if other == secret {
		t.Error("two keys have the same secret")
	}
	for _, tenant := range []string{"", "Acme", "-x", "a b", strings.Repeat("a", 64), "ünïcode"} {
		if _, _, err := NewAPIKey(tenant, "x"); err == nil || !strings.Contains(err.Error(), "tenant") {
			t.Errorf("NewAPIKey(%q) = %v, want a tenant error", tenant, err)
		}
	}
}

// TestNewAPIKeyOf: each form of secret has its shape (an E2B one passes
// the E2B SDKs' check, ^e2b_[0-9a-f]+$, with 64 hex digits) and is stored
// as its hash, like any key; an unknown form is refused.
func TestNewAPIKeyOf(t *testing.T) {
	e2bShape := regexp.MustCompile(`^e2b_[0-9a-f]{64}$`)
	crkShape := regexp.MustCompile(`^crk_[A-Za-z0-9_-]{43}$`)
	for _, tc := range []struct {
		form  KeyForm
		shape *regexp.Regexp
	}{{KeyCrucible, crkShape}, {KeyE2B, e2bShape}} {
		secret, k, err := NewAPIKeyOf(tc.form, "acme", "sdk")
		if err != nil {
			t.Fatal(err)
		}
		if !tc.shape.MatchString(secret) || k.Hash != HashAPIKey(secret) || k.Tenant != "acme" {
			t.Errorf("form %d: secret %q, key %+v; want %s stored as its hash", tc.form, secret, k, tc.shape)
		}
	}
	if _, _, err := NewAPIKeyOf(KeyForm(7), "acme", ""); err == nil || !strings.Contains(err.Error(), "form") {
		t.Errorf("an unknown form: %v, want an error naming the form", err)
	}
}

// testKeys: a key authenticates by its hash only until it is revoked, and
// listings show revoked keys with their revocation time.
func testKeys(t *testing.T, s Store) {
	if n, err := s.ActiveKeys(ctx); err != nil || n != 0 {
		t.Fatalf("ActiveKeys of an empty store = %d, %v", n, err)
	}
	setClock(s, at(0))
	secretA, a, _ := NewAPIKey("alice", "laptop")
	secretB, b, _ := NewAPIKey("bob", "")
	for _, k := range []*APIKey{a, b} {
		if err := s.CreateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateKey(ctx, &APIKey{ID: "x", Tenant: "Not Valid", Hash: "h"}); err == nil {
		t.Error("CreateKey accepted an invalid tenant")
	}
	got, err := s.KeyByHash(ctx, HashAPIKey(secretA))
	if err != nil || got.Tenant != "alice" || got.ID != a.ID || got.Name != "laptop" || !got.CreatedAt.Equal(at(0).Truncate(time.Microsecond)) {
		t.Fatalf("KeyByHash(a) = %+v, %v", got, err)
	}
	if _, err := s.KeyByHash(ctx, HashAPIKey("crk_unknown")); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown key: %v, want ErrNotFound", err)
	}
	setClock(s, at(5))
	if err := s.RevokeKey(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	setClock(s, at(9))
	if err := s.RevokeKey(ctx, a.ID); err != nil {
		t.Errorf("revoking twice: %v", err)
	}
	if err := s.RevokeKey(ctx, "key_nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("revoking an unknown key: %v, want ErrNotFound", err)
	}
	if _, err := s.KeyByHash(ctx, HashAPIKey(secretA)); !errors.Is(err, ErrNotFound) {
		t.Errorf("revoked key still authenticates: %v", err)
	}
	if k, err := s.KeyByHash(ctx, HashAPIKey(secretB)); err != nil || k.Tenant != "bob" {
		t.Errorf("bob's key after alice's revocation: %+v, %v", k, err)
	}
	keys, err := s.ListKeys(ctx)
	if err != nil || len(keys) != 2 {
		t.Fatalf("ListKeys = %v, %v", keys, err)
	}
	for _, k := range keys {
		revoked := k.RevokedAt != nil
		if revoked != (k.ID == a.ID) || (revoked && !k.RevokedAt.Equal(at(5).Truncate(time.Microsecond))) {
			t.Errorf("key %s revoked at %v", k.ID, k.RevokedAt)
		}
	}
	if n, err := s.ActiveKeys(ctx); err != nil || n != 1 {
		t.Errorf("ActiveKeys = %d, %v, want 1", n, err)
	}
}

// testArtifacts: contents round-trip byte for byte, per tenant, and
// omitted contents are not stored.
func testArtifacts(t *testing.T, s Store) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\xff")
	as := []sandbox.Artifact{
		{Name: "plot.png", MIME: "image/png", Size: int64(len(png)), SHA256: "p", Content: png},
		{Name: "dir/empty.txt", MIME: "text/plain", SHA256: "e"},
		{Name: "big.bin", MIME: "application/octet-stream", Size: 1 << 30, SHA256: "b", ContentOmitted: true},
	}
	if err := s.PutArtifacts(ctx, "alice", "run1", as); err != nil {
		t.Fatal(err)
	}
	m, content, err := s.GetArtifact(ctx, "alice", "run1", "plot.png")
	if err != nil || !bytes.Equal(content, png) || m.MIME != "image/png" || m.Size != int64(len(png)) || m.SHA256 != "p" {
		t.Errorf("plot.png = %+v %q, %v", m, content, err)
	}
	if _, content, err := s.GetArtifact(ctx, "alice", "run1", "dir/empty.txt"); err != nil || content == nil || len(content) != 0 {
		t.Errorf("empty artifact = %q, %v", content, err)
	}
	for _, c := range []struct{ tenant, run, name string }{
		{"bob", "run1", "plot.png"},
		{"alice", "run2", "plot.png"},
		{"alice", "run1", "big.bin"},
		{"alice", "run1", "nope"},
	} {
		if _, _, err := s.GetArtifact(ctx, c.tenant, c.run, c.name); !errors.Is(err, ErrNotFound) {
			t.Errorf("GetArtifact(%s, %s, %s) = %v, want ErrNotFound", c.tenant, c.run, c.name, err)
		}
	}
	// All or none: a duplicate name fails the whole batch.
	dup := []sandbox.Artifact{{Name: "x", MIME: "text/plain"}, {Name: "x", MIME: "text/plain"}}
	if err := s.PutArtifacts(ctx, "alice", "run3", dup); err == nil {
		t.Error("duplicate artifact names accepted")
	}
	if _, _, err := s.GetArtifact(ctx, "alice", "run3", "x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a failed batch left an artifact: %v", err)
	}
}
