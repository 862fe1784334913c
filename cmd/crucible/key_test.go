package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"testing"
)

// TestKeyCreateForms: `crucible key create` prints a crk_ secret, and with
// --e2b one of the shape E2B's SDKs expect of E2B_API_KEY; both are listed
// as keys of their tenants.
func TestKeyCreateForms(t *testing.T) {
	db := filepath.Join(t.TempDir(), "keys.db")
	for _, tc := range []struct {
		args  []string
		shape string
	}{
		{nil, `^crk_[A-Za-z0-9_-]{43}$`},
		{[]string{"--e2b"}, `^e2b_[0-9a-f]{64}$`},
	} {
		stdout, stderr, code := cli{}.run(t, append([]string{"key", "create", "--db", db, "--tenant", "acme", "--json"}, tc.args...)...)
		var k struct{ Secret, Tenant string }
		if code != 0 || json.Unmarshal([]byte(stdout), &k) != nil || k.Tenant != "acme" || !regexp.MustCompile(tc.shape).MatchString(k.Secret) {
			t.Errorf("key create %v: exit %d, %q (stderr %q); want a secret matching %s", tc.args, code, stdout, stderr, tc.shape)
		}
	}
	stdout, _, code := cli{}.run(t, "key", "list", "--db", db, "--json")
	var keys []struct{ Tenant string }
	if code != 0 || json.Unmarshal([]byte(stdout), &keys) != nil || len(keys) != 2 {
		t.Errorf("key list: exit %d, %q; want both keys", code, stdout)
	}
}
