package main

import (
	"strings"
	"testing"
)

// TestClusterFlagsCheck: --cluster needs a Postgres store, named in the
// refusal, and the flags that go with it need it (the embedded server's,
// --cluster embedded); without them any store goes.
func TestClusterFlagsCheck(t *testing.T) {
	for _, tc := range []struct {
		url, db, want string
		given         []string
	}{
		{"", "", "", nil},
		{"", "/tmp/x.db", "", nil},
		{"nats://127.0.0.1:4222", "postgres://u@h/db", "", nil},
		{"embedded", "postgresql://u@h/db", "", nil},
		{"nats://127.0.0.1:4222", "", "--cluster needs --db postgres://", nil},
		{"embedded", "/var/lib/crucible/crucible.db", "--cluster needs --db postgres://", nil},
		{"", "", "--node-id needs --cluster", []string{"node-id"}},
		{"", "postgres://u@h/db", "--advertise needs --cluster", []string{"advertise"}},
		{"nats://127.0.0.1:4222", "postgres://u@h/db", "--cluster-listen needs --cluster embedded", []string{"node-id", "cluster-listen"}},
		{"nats://127.0.0.1:4222", "postgres://u@h/db", "--cluster-data needs --cluster embedded", []string{"cluster-data"}},
		{"embedded", "postgres://u@h/db", "", []string{"node-id", "advertise", "cluster-listen", "cluster-data"}},
	} {
		c := clusterFlags{url: tc.url, given: tc.given}
		err := c.check(tc.db)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("--cluster %q --db %q: %v, want %q", tc.url, tc.db, err, tc.want)
		}
	}
}
