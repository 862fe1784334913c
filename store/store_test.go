package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestSQLite runs the suite against SQLite databases in temporary files.
func TestSQLite(t *testing.T) {
	open := func(t *testing.T) Store {
		return mustOpen(t, "sqlite:"+filepath.Join(t.TempDir(), "crucible.db"))
	}
	runSuite(t, open)
	t.Run("migrations idempotent", func(t *testing.T) {
		testReopen(t, filepath.Join(t.TempDir(), "crucible.db"))
	})
	t.Run("WAL mode", func(t *testing.T) {
		s := open(t)
		var mode string
		if err := s.(*sqlStore).db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if mode != "wal" {
			t.Errorf("journal_mode = %q, want wal", mode)
		}
	})
}

// TestPostgres runs the same suite against databases of a temporary
// PostgreSQL cluster.
func TestPostgres(t *testing.T) {
	pg := startPostgres(t)
	runSuite(t, func(t *testing.T) Store { return mustOpen(t, pg.newDatabase(t)) })
	t.Run("migrations idempotent", func(t *testing.T) {
		testReopen(t, pg.newDatabase(t))
	})
}

func mustOpen(t *testing.T, url string) Store {
	t.Helper()
	s, err := Open(context.Background(), url)
	if err != nil {
		t.Fatalf("Open(%q): %v", url, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// runSuite is the behaviour every Store must have; open returns a new,
// empty store.
func runSuite(t *testing.T, open func(t *testing.T) Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s Store)
	}{
		{"round trip", testRoundTrip},
		{"create defaults and validation", testCreateDefaults},
		{"tenant isolation", testTenantIsolation},
		{"list filters", testListFilters},
		{"list pagination", testListPagination},
		{"mark interrupted", testMarkInterrupted},
		{"cache", testCache},
		{"concurrent creates", testConcurrentCreates},
		{"keys", testKeys},
		{"artifacts", testArtifacts},
	}
	tests = append(tests, agentRunTests...)
	tests = append(tests, runNodeTests...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

var ctx = context.Background()

// at returns a fixed time with nanoseconds, s seconds after a base.
func at(s int) time.Time {
	return time.Date(2024, 3, 1, 12, 0, s, 123456789, time.FixedZone("X", 3600))
}

func ptr[T any](v T) *T { return &v }

// setClock makes s see now as the current time.
func setClock(s Store, now time.Time) { s.(*sqlStore).now = func() time.Time { return now } }

func mustCreate(t *testing.T, s Store, r *api.Run) *api.Run {
	t.Helper()
	if err := s.Create(ctx, r); err != nil {
		t.Fatalf("Create: %v", err)
	}
	return r
}

func mustGet(t *testing.T, s Store, tenant, id string) *api.Run {
	t.Helper()
	r, err := s.Get(ctx, tenant, id)
	if err != nil {
		t.Fatalf("Get(%s, %s): %v", tenant, id, err)
	}
	return r
}

// sameRun fails t unless got equals want, field for field.
func sameRun(t *testing.T, got, want *api.Run) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("run differs\n got: %s\nwant: %s\n(go: %#v vs %#v)", g, w, got, want)
	}
}

func fullRun(id, tenant string) *api.Run {
	return &api.Run{
		ID:              id,
		Tenant:          tenant,
		Language:        sandbox.Python,
		CodeHash:        "ab12",
		Code:            "print('héllo')\n",
		ImageDigest:     "sha256:0123",
		Limits:          sandbox.Limits{}.WithDefaults(),
		Status:          sandbox.StatusError,
		ExitCode:        1,
		Signal:          "SIGKILL",
		Reason:          "wall-time limit of 5s reached",
		Metrics:         sandbox.Metrics{WallMS: 12.5, CPUMS: 3.25, PeakMemoryBytes: 1 << 20, QueueMS: 0.1, StartMS: 7},
		Stdout:          sandbox.Data("out\x00\xff binary"),
		Stderr:          sandbox.Data("err [REDACTED]"),
		StdoutTruncated: true,
		StderrTruncated: true,
		Error:           &sandbox.ExecError{Type: "NameError", Message: "x", Line: 3, Column: 4, Traceback: "Traceback..."},
		Artifacts: []api.ArtifactMeta{
			{Name: "a.png", MIME: "image/png", Size: 10, SHA256: "aa"},
			{Name: "dir/b.csv", MIME: "text/csv", Size: 0, SHA256: "bb"},
		},
		Network: &sandbox.NetworkLog{Connections: []sandbox.Connection{
			{Time: time.Date(2024, 3, 1, 11, 0, 1, 5, time.UTC), Kind: "http", Host: "web.test", IP: "198.51.100.2", Port: 80, BytesSent: 80, BytesReceived: 200, Verdict: sandbox.VerdictAllowed},
			{Time: time.Date(2024, 3, 1, 11, 0, 1, 7, time.UTC), Kind: "connect", Host: "10.0.0.1", IP: "10.0.0.1", Port: 443, BytesSent: 40, BytesReceived: 90, Verdict: sandbox.VerdictRefused, Reason: "private"},
		}, Unlisted: 3, BytesSent: 120, BytesReceived: 290},
		CacheHit:   true,
		Redactions: 2,
		SessionID:  "ses_1",
		AgentRun:   "agt_1",
		Image:      "datascience",
		CreatedAt:  at(0),
		StartedAt:  ptr(at(1)),
		FinishedAt: ptr(at(2)),
	}
}

func testRoundTrip(t *testing.T, s Store) {
	tests := []struct {
		name string
		run  *api.Run
	}{
		{"minimal", &api.Run{ID: "min", Tenant: "t", Language: sandbox.Bash, Status: api.StatusQueued, CreatedAt: at(0)}},
		{"every field", fullRun("full", "t")},
		{"started only", &api.Run{ID: "started", Tenant: "t", Language: sandbox.JavaScript, Status: api.StatusRunning,
			CreatedAt: at(0), StartedAt: ptr(at(1)), ExitCode: -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mustCreate(t, s, tc.run)
			if ns := tc.run.CreatedAt.Nanosecond(); ns != 123456000 || tc.run.CreatedAt.Location() != time.UTC {
				t.Errorf("Create left CreatedAt %v, want it in UTC truncated to µs", tc.run.CreatedAt)
			}
			sameRun(t, mustGet(t, s, "t", tc.run.ID), tc.run)
		})
	}

	t.Run("update", func(t *testing.T) {
		r := mustGet(t, s, "t", "min")
		created := r.CreatedAt
		r.Status = sandbox.StatusOK
		r.ExitCode = 0
		r.Stdout = sandbox.Data("done\n")
		r.Error = &sandbox.ExecError{Type: "E", Message: "m"}
		r.Artifacts = []api.ArtifactMeta{{Name: "x", MIME: "text/plain", Size: 1, SHA256: "cc"}}
		r.Metrics.WallMS = 99
		r.StartedAt, r.FinishedAt = ptr(at(5)), ptr(at(6))
		r.CreatedAt = at(100) // not updatable
		if err := s.Update(ctx, r); err != nil {
			t.Fatal(err)
		}
		r.CreatedAt = created
		sameRun(t, mustGet(t, s, "t", "min"), r)

		// Back to nil: the update clears what it does not set.
		full := mustGet(t, s, "t", "full")
		full.Error, full.Artifacts, full.StartedAt, full.FinishedAt, full.Stdout, full.Network = nil, nil, nil, nil, nil, nil
		if err := s.Update(ctx, full); err != nil {
			t.Fatal(err)
		}
		sameRun(t, mustGet(t, s, "t", "full"), full)
	})

	t.Run("update missing", func(t *testing.T) {
		err := s.Update(ctx, &api.Run{ID: "nope", Tenant: "t", Status: sandbox.StatusOK})
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("Update of a missing run: %v, want ErrNotFound", err)
		}
	})
	t.Run("get missing", func(t *testing.T) {
		if _, err := s.Get(ctx, "t", "nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get of a missing run: %v, want ErrNotFound", err)
		}
	})
}

func testCreateDefaults(t *testing.T, s Store) {
	setClock(s, at(7))
	r := mustCreate(t, s, &api.Run{Tenant: "t", Language: sandbox.Python})
	if len(r.ID) != 32 || r.Status != api.StatusQueued || !r.CreatedAt.Equal(at(7).Truncate(time.Microsecond)) {
		t.Errorf("Create defaults: ID %q, Status %q, CreatedAt %v", r.ID, r.Status, r.CreatedAt)
	}
	sameRun(t, mustGet(t, s, "t", r.ID), r)

	bad := []struct {
		name string
		run  api.Run
	}{
		{"no tenant", api.Run{ID: "x", Language: sandbox.Python}},
		{"unknown status", api.Run{ID: "y", Tenant: "t", Status: "weird"}},
		{"duplicate ID", api.Run{ID: r.ID, Tenant: "t"}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.Create(ctx, &tc.run); err == nil {
				t.Error("Create succeeded, want an error")
			}
		})
	}
}

func testTenantIsolation(t *testing.T, s Store) {
	a := mustCreate(t, s, fullRun("run-a", "alice"))
	b := mustCreate(t, s, fullRun("run-b", "bob"))

	if _, err := s.Get(ctx, "alice", b.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("alice got bob's run: %v", err)
	}
	if _, err := s.Get(ctx, "", b.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("empty tenant got bob's run: %v", err)
	}
	hijack := *b
	hijack.Tenant, hijack.Code = "alice", "stolen"
	if err := s.Update(ctx, &hijack); !errors.Is(err, ErrNotFound) {
		t.Errorf("alice updated bob's run: %v", err)
	}
	if got := mustGet(t, s, "bob", b.ID); got.Code != b.Code {
		t.Errorf("bob's run changed: code %q", got.Code)
	}
	for tenant, want := range map[string]string{"alice": a.ID, "bob": b.ID} {
		runs, _, err := s.List(ctx, tenant, Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 1 || runs[0].ID != want {
			t.Errorf("List(%s) = %v, want only %s", tenant, ids(runs), want)
		}
	}
}

func ids(runs []api.Run) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}

var (
	listStatuses  = []sandbox.Status{sandbox.StatusOK, sandbox.StatusError, sandbox.StatusTimeout}
	listLanguages = []sandbox.Language{sandbox.Python, sandbox.Bash, sandbox.JavaScript, sandbox.Python}
)

// createListRuns creates n runs of tenant, two per second of creation time,
// plus runs of another tenant, and returns tenant's runs newest first.
func createListRuns(t *testing.T, s Store, tenant string, n int) []api.Run {
	var runs []api.Run
	for i := range n {
		r := &api.Run{
			ID:        fmt.Sprintf("%s-r%03d", tenant, i),
			Tenant:    tenant,
			Language:  listLanguages[i%len(listLanguages)],
			Status:    listStatuses[i%len(listStatuses)],
			CreatedAt: at(i / 2),
			SessionID: fmt.Sprintf("ses_%d", i%3),
			AgentRun:  fmt.Sprintf("agt_%d", i%4),
		}
		mustCreate(t, s, r)
		runs = append(runs, *r)
		if i%10 == 0 {
			mustCreate(t, s, &api.Run{ID: fmt.Sprintf("%s-o%03d", tenant, i), Tenant: "other-" + tenant, Language: r.Language, Status: r.Status, CreatedAt: r.CreatedAt})
		}
	}
	sort.Slice(runs, func(i, j int) bool {
		if !runs[i].CreatedAt.Equal(runs[j].CreatedAt) {
			return runs[i].CreatedAt.After(runs[j].CreatedAt)
		}
		return runs[i].ID > runs[j].ID
	})
	return runs
}

func testListFilters(t *testing.T, s Store) {
	all := createListRuns(t, s, "t", 120)
	keep := func(pred func(api.Run) bool) []string {
		var out []string
		for _, r := range all {
			if pred(r) {
				out = append(out, r.ID)
			}
		}
		return out
	}
	tests := []struct {
		name     string
		filter   Filter
		want     []string
		wantNext bool
	}{
		{"default limit", Filter{}, ids(all[:DefaultLimit]), true},
		{"limit above max", Filter{Limit: 10_000}, ids(all), false},
		{"status", Filter{Status: sandbox.StatusTimeout, Limit: 500}, keep(func(r api.Run) bool { return r.Status == sandbox.StatusTimeout }), false},
		{"language", Filter{Language: sandbox.Bash, Limit: 500}, keep(func(r api.Run) bool { return r.Language == sandbox.Bash }), false},
		{"since", Filter{Since: at(50), Limit: 500}, keep(func(r api.Run) bool { return !r.CreatedAt.Before(at(50).Truncate(time.Microsecond)) }), false},
		{"combined", Filter{Status: sandbox.StatusOK, Language: sandbox.Python, Since: at(10), Limit: 500},
			keep(func(r api.Run) bool {
				return r.Status == sandbox.StatusOK && r.Language == sandbox.Python && !r.CreatedAt.Before(at(10).Truncate(time.Microsecond))
			}), false},
		{"session", Filter{SessionID: "ses_1", Limit: 500}, keep(func(r api.Run) bool { return r.SessionID == "ses_1" }), false},
		{"agent run", Filter{AgentRun: "agt_2", Limit: 500}, keep(func(r api.Run) bool { return r.AgentRun == "agt_2" }), false},
		{"no match", Filter{Status: api.StatusInterrupted}, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runs, next, err := s.List(ctx, "t", tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(runs); !reflect.DeepEqual(got, tc.want) && len(got)+len(tc.want) > 0 {
				t.Errorf("got %d runs %v\nwant %d %v", len(got), got, len(tc.want), tc.want)
			}
			if (next != "") != tc.wantNext {
				t.Errorf("next = %q, want a next page: %v", next, tc.wantNext)
			}
		})
	}
	t.Run("bad cursor", func(t *testing.T) {
		for _, c := range []string{"!!", "bm9jb2xvbg", "eDp5"} { // not base64, "nocolon", "x:y"
			if _, _, err := s.List(ctx, "t", Filter{Cursor: c}); !errors.Is(err, ErrBadCursor) {
				t.Errorf("cursor %q: %v, want ErrBadCursor", c, err)
			}
		}
	})
}

func testListPagination(t *testing.T, s Store) {
	for i, f := range []Filter{{Limit: 7}, {Limit: 1}, {Limit: 120}, {Limit: 13, Status: sandbox.StatusOK}} {
		t.Run(fmt.Sprintf("limit %d status %q", f.Limit, f.Status), func(t *testing.T) {
			tenant := fmt.Sprintf("p%d", i)
			all := createListRuns(t, s, tenant, 120)
			var want []string
			for _, r := range all {
				if f.Status == "" || r.Status == f.Status {
					want = append(want, r.ID)
				}
			}
			var got []string
			seen := map[string]bool{}
			for page := 0; ; page++ {
				runs, next, err := s.List(ctx, tenant, f)
				if err != nil {
					t.Fatal(err)
				}
				if len(runs) > f.Limit {
					t.Fatalf("page %d has %d runs, limit %d", page, len(runs), f.Limit)
				}
				for _, r := range runs {
					if seen[r.ID] {
						t.Fatalf("run %s listed twice", r.ID)
					}
					seen[r.ID] = true
					got = append(got, r.ID)
				}
				if next == "" {
					break
				}
				// A run created while paging is newer than every page and
				// must not shift the pages that follow.
				mustCreate(t, s, &api.Run{Tenant: tenant, Language: sandbox.Python, Status: sandbox.StatusOK})
				f.Cursor = next
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("paged %d runs %v\nwant %d %v", len(got), got, len(want), want)
			}
		})
	}
}

func testMarkInterrupted(t *testing.T, s Store) {
	statuses := []sandbox.Status{api.StatusQueued, api.StatusRunning, sandbox.StatusOK, sandbox.StatusError, api.StatusQueued}
	for i, st := range statuses {
		mustCreate(t, s, &api.Run{ID: fmt.Sprintf("m%d", i), Tenant: fmt.Sprintf("t%d", i%2), Language: sandbox.Python, Status: st,
			CreatedAt: at(i), FinishedAt: map[bool]*time.Time{true: ptr(at(9))}[st == sandbox.StatusOK]})
	}
	now := at(60)
	setClock(s, now)
	n, err := s.MarkInterrupted(ctx)
	if err != nil || n != 3 {
		t.Fatalf("MarkInterrupted = %d, %v; want 3", n, err)
	}
	for i, st := range statuses {
		r := mustGet(t, s, fmt.Sprintf("t%d", i%2), fmt.Sprintf("m%d", i))
		switch st {
		case api.StatusQueued, api.StatusRunning:
			if r.Status != api.StatusInterrupted || r.FinishedAt == nil || !r.FinishedAt.Equal(now.Truncate(time.Microsecond)) || r.Reason == "" {
				t.Errorf("run m%d (%s): status %s, finished %v, reason %q; want interrupted at %v", i, st, r.Status, r.FinishedAt, r.Reason, now)
			}
		default:
			if r.Status != st || (st == sandbox.StatusOK) != (r.FinishedAt != nil) {
				t.Errorf("run m%d (%s) changed: status %s, finished %v", i, st, r.Status, r.FinishedAt)
			}
		}
	}
	if n, err := s.MarkInterrupted(ctx); err != nil || n != 0 {
		t.Errorf("second MarkInterrupted = %d, %v; want 0", n, err)
	}
}

func testCache(t *testing.T, s Store) {
	now := at(0)
	setClock(s, now)
	r1 := mustCreate(t, s, fullRun("c1", "alice"))
	r2 := mustCreate(t, s, fullRun("c2", "alice"))
	bobs := mustCreate(t, s, fullRun("c3", "bob"))
	get := func(tenant, key string) string {
		t.Helper()
		r, ok, err := s.CacheGet(ctx, tenant, key)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return ""
		}
		return r.ID
	}
	put := func(tenant, key, id string, ttl time.Duration) {
		t.Helper()
		if err := s.CachePut(ctx, tenant, key, id, ttl); err != nil {
			t.Fatal(err)
		}
	}
	entries := func() int {
		t.Helper()
		var n int
		if err := s.(*sqlStore).db.QueryRow(`SELECT COUNT(*) FROM run_cache`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	put("alice", "k", r1.ID, time.Minute)
	put("alice", "short", r1.ID, time.Second)
	put("alice", "bobs", bobs.ID, time.Minute) // another tenant's run
	steps := []struct {
		name   string
		tenant string
		key    string
		want   string
	}{
		{"hit", "alice", "k", r1.ID},
		{"unknown key", "alice", "nope", ""},
		{"other tenant's key", "bob", "k", ""},
		{"entry naming another tenant's run", "alice", "bobs", ""},
		{"not yet expired", "alice", "short", r1.ID},
	}
	for _, st := range steps {
		if got := get(st.tenant, st.key); got != st.want {
			t.Errorf("%s: CacheGet(%s, %s) = %q, want %q", st.name, st.tenant, st.key, got, st.want)
		}
	}
	if r, _, _ := s.CacheGet(ctx, "alice", "k"); r != nil {
		sameRun(t, r, r1)
	}

	put("alice", "k", r2.ID, time.Minute) // replaces
	if got := get("alice", "k"); got != r2.ID {
		t.Errorf("after replacing: %q, want %q", got, r2.ID)
	}

	setClock(s, now.Add(time.Second)) // "short" expires exactly now
	if got := get("alice", "short"); got != "" {
		t.Errorf("expired entry hit: %q", got)
	}
	if n := entries(); n != 2 {
		t.Errorf("%d cache entries after an expired miss, want 2 (expired ones deleted)", n)
	}
	setClock(s, now.Add(2*time.Minute))
	put("bob", "k", bobs.ID, time.Minute) // cleans up alice's expired entries too
	if n := entries(); n != 1 {
		t.Errorf("%d cache entries after CachePut, want 1", n)
	}
	if got := get("bob", "k"); got != bobs.ID {
		t.Errorf("bob's entry: %q, want %q", got, bobs.ID)
	}
	if err := s.CachePut(ctx, "bob", "k", bobs.ID, 0); err == nil {
		t.Error("CachePut with ttl 0 succeeded")
	}
}

func testConcurrentCreates(t *testing.T, s Store) {
	const goroutines, each = 20, 10
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*each)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				r := fullRun(fmt.Sprintf("g%02d-%02d", g, i), "t")
				if err := s.Create(ctx, r); err != nil {
					errs <- err
					return
				}
				r.Status = sandbox.StatusOK
				if err := s.Update(ctx, r); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	runs, _, err := s.List(ctx, "t", Filter{Limit: MaxLimit, Status: sandbox.StatusOK})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != goroutines*each {
		t.Errorf("%d runs stored, want %d", len(runs), goroutines*each)
	}
}

// testReopen opens url twice: the second Open applies no migration again
// and sees the first one's data.
func testReopen(t *testing.T, url string) {
	s1 := mustOpen(t, url)
	r := mustCreate(t, s1, fullRun("persist", "t"))
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := mustOpen(t, url)
	sameRun(t, mustGet(t, s2, "t", r.ID), r)
	var n, maxVersion int
	if err := s2.(*sqlStore).db.QueryRow(`SELECT COUNT(*), MAX(version) FROM schema_migrations`).Scan(&n, &maxVersion); err != nil {
		t.Fatal(err)
	}
	if last := migrations[len(migrations)-1].version; n != len(migrations) || maxVersion != last {
		t.Errorf("schema_migrations has %d rows up to version %d, want %d up to %d", n, maxVersion, len(migrations), last)
	}
}

func TestOpenURL(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		url     string
		wantErr string // "" when Open must succeed
	}{
		{":memory:", ""},
		{"sqlite::memory:", ""},
		{filepath.Join(dir, "bare.db"), ""},
		{"sqlite:" + filepath.Join(dir, "sub", "dir", "prefixed.db"), ""},
		{"sqlite:", `needs a path`},
		{filepath.Join(dir, "what?.db"), `must not contain '?'`},
		{"mysql://root:hunter2@db/crucible", `unsupported database URL scheme "mysql"`},
		{"file:/tmp/x.db", `unsupported database URL scheme "file"`},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			s, err := Open(ctx, tc.url)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				s.Close()
				return
			}
			if err == nil {
				s.Close()
				t.Fatalf("Open succeeded, want an error containing %q", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q, want one containing %q and no password", err, tc.wantErr)
			}
		})
	}
}

func TestArtifactMetas(t *testing.T) {
	got := api.ArtifactMetas([]sandbox.Artifact{{Name: "a", MIME: "m", Size: 3, SHA256: "h", Content: sandbox.Data("abc")}})
	want := []api.ArtifactMeta{{Name: "a", MIME: "m", Size: 3, SHA256: "h"}}
	if !reflect.DeepEqual(got, want) || api.ArtifactMetas(nil) != nil {
		t.Errorf("api.ArtifactMetas = %+v, want %+v", got, want)
	}
}

func TestCacheKey(t *testing.T) {
	base := sandbox.Request{
		Language: sandbox.Python,
		Code:     "print(input())",
		Stdin:    sandbox.Data("x"),
		Files: []sandbox.File{
			{Name: "a.txt", Content: sandbox.Data("A")},
			{Name: "run.sh", Content: sandbox.Data("#!/bin/sh"), Executable: true},
		},
		Env: map[string]string{"A": "1", "B": "2"},
	}
	const digest = "sha256:img"
	baseKey := CacheKey(base, digest)
	if len(baseKey) != 64 {
		t.Fatalf("key %q is not a hex SHA-256", baseKey)
	}
	tests := []struct {
		name   string
		change func(r *sandbox.Request) string // returns the image digest
		same   bool
	}{
		{"identical", func(r *sandbox.Request) string { return digest }, true},
		{"byte moved from code to stdin", func(r *sandbox.Request) string {
			r.Code, r.Stdin = "print(input()", sandbox.Data(")x")
			return digest
		}, false},
		{"file renamed", func(r *sandbox.Request) string {
			r.Files = []sandbox.File{{Name: "b.txt", Content: sandbox.Data("A")}, r.Files[1]}
			return digest
		}, false},
		{"byte moved from file name to content", func(r *sandbox.Request) string {
			r.Files = []sandbox.File{{Name: "a.tx", Content: sandbox.Data("tA")}, r.Files[1]}
			return digest
		}, false},
		{"executable bit", func(r *sandbox.Request) string {
			r.Files = []sandbox.File{r.Files[0], {Name: "run.sh", Content: sandbox.Data("#!/bin/sh")}}
			return digest
		}, false},
		{"files in another order", func(r *sandbox.Request) string {
			r.Files = []sandbox.File{r.Files[1], r.Files[0]}
			return digest
		}, true},
		{"env built in another order", func(r *sandbox.Request) string {
			r.Env = map[string]string{}
			r.Env["B"] = "2"
			r.Env["A"] = "1"
			return digest
		}, true},
		{"byte moved from env name to value", func(r *sandbox.Request) string {
			r.Env = map[string]string{"A": "1", "": "B2"}
			return digest
		}, false},
		{"env value changed", func(r *sandbox.Request) string { r.Env = map[string]string{"A": "1", "B": "3"}; return digest }, false},
		{"explicit default limits", func(r *sandbox.Request) string { r.Limits = sandbox.DefaultLimits(); return digest }, true},
		{"other limits", func(r *sandbox.Request) string { r.Limits.WallTimeMS = 1000; return digest }, false},
		{"file size limit defaulting to disk", func(r *sandbox.Request) string {
			r.Limits.FileSizeBytes = sandbox.DefaultLimits().DiskBytes
			return digest
		}, true},
		{"network none explicit", func(r *sandbox.Request) string {
			if err := json.Unmarshal([]byte(`"none"`), &r.Network); err != nil {
				t.Fatal(err)
			}
			return digest
		}, true},
		{"network allowlist", func(r *sandbox.Request) string { r.Network.Allow = []string{"example.org"}; return digest }, false},
		{"other image", func(r *sandbox.Request) string { return "sha256:other" }, false},
		{"other image name", func(r *sandbox.Request) string { r.Image = "host"; return digest }, false},
		{"byte moved from image name to digest", func(r *sandbox.Request) string { r.Image = "s"; return "ha256:img" }, false},
		{"other language", func(r *sandbox.Request) string { r.Language = sandbox.Bash; return digest }, false},
		{"no stdin", func(r *sandbox.Request) string { r.Stdin = nil; return digest }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := base
			r.Files = append([]sandbox.File(nil), base.Files...)
			r.Env = map[string]string{"A": "1", "B": "2"}
			key := CacheKey(r, tc.change(&r))
			if (key == baseKey) != tc.same {
				t.Errorf("key equal to base: %v, want %v", key == baseKey, tc.same)
			}
		})
	}
}
