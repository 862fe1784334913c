package main

import (
	"strings"
	"testing"
)

// TestClusterFlagsCheck: --cluster needs a Postgres store, named in the
// refusal; without --cluster any store goes.
func TestClusterFlagsCheck(t *testing.T) {
	for _, tc := range []struct {
		url, db, want string
	}{
		{"", "", ""},
		{"", "/tmp/x.db", ""},
		{"nats://127.0.0.1:4222", "postgres://u@h/db", ""},
		{"embedded", "postgresql://u@h/db", ""},
		{"nats://127.0.0.1:4222", "", "--cluster needs --db postgres://"},
		{"embedded", "/var/lib/crucible/crucible.db", "--cluster needs --db postgres://"},
	} {
		c := clusterFlags{url: tc.url}
		err := c.check(tc.db)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("--cluster %q --db %q: %v, want %q", tc.url, tc.db, err, tc.want)
		}
	}
}
