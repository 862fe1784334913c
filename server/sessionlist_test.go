package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// sessionInfo is what the API says of a session.
type sessionInfo struct {
	ID         string    `json:"id"`
	Language   string    `json:"language"`
	Image      string    `json:"image"`
	Cells      int       `json:"cells"`
	CreatedAt  time.Time `json:"created_at"`
	LastUsedAt time.Time `json:"last_used_at"`
	Limits     struct {
		WallTimeMS  int64 `json:"wall_time_ms"`
		MemoryBytes int64 `json:"memory_bytes"`
	} `json:"limits"`
}

// TestSessionDefaults: POST /v1/sessions with {} or no body at all opens
// a Python session with the sessions' default limits
// (sandbox.DefaultSessionLimits: a minute per cell, 2 GiB), which GET
// /v1/sessions states; a server whose maxima are lower lowers them to its
// maxima, and says so.
func TestSessionDefaults(t *testing.T) {
	want := sandbox.DefaultSessionLimits().WithSessionDefaults()
	lowMaxima := sandbox.Limits{MemoryBytes: 1 << 30, WallTimeMS: 20_000}
	lowered := want
	lowered.MemoryBytes, lowered.WallTimeMS = lowMaxima.MemoryBytes, lowMaxima.WallTimeMS
	for _, tc := range []struct {
		name   string
		maxima sandbox.Limits
		want   sandbox.Limits
	}{{"default maxima", sandbox.Limits{}, want}, {"lower maxima", lowMaxima, lowered}} {
		ts := newFakeServer(t, &imageRuntime{name: "default"}, func(c *config) { c.Maxima = tc.maxima })
		for name, body := range map[string]any{"{}": map[string]any{}, "no body": nil, "empty body": []byte{}} {
			r := ts.do("POST", "/v1/sessions", body)
			var info struct {
				ID       string
				Language string
				Limits   sandbox.Limits
			}
			if r.status != http.StatusCreated {
				t.Errorf("%s, %s: status %d, want 201; body %s", tc.name, name, r.status, r.body)
				continue
			}
			r.json(t, &info)
			if info.ID == "" || info.Language != "python" || info.Limits != tc.want {
				t.Errorf("%s, %s: %s\nwant an id, python and the limits %+v", tc.name, name, r.body, tc.want)
			}
		}
		var list struct{ Defaults sandbox.Limits }
		ts.do("GET", "/v1/sessions", nil).json(t, &list)
		if list.Defaults != tc.want {
			t.Errorf("%s: GET /v1/sessions says the defaults are %+v, want %+v", tc.name, list.Defaults, tc.want)
		}
	}
}

// TestListSessions: GET /v1/sessions lists the caller's open sessions and
// GET /v1/sessions/{id} describes one; another tenant's are neither
// listed nor found, and a closed one is gone from the list.
func TestListSessions(t *testing.T) {
	base := newFakeServer(t, &imageRuntime{name: "default"}, nil)
	alice, bob := base.as(base.newKey("alice")), base.as(base.newKey("bob"))

	var a1, a2, b1 sessionInfo
	alice.do("POST", "/v1/sessions", map[string]any{"language": "python", "limits": map[string]any{"memory_bytes": 256 << 20}}).json(t, &a1)
	alice.do("POST", "/v1/sessions", map[string]any{"language": "python"}).json(t, &a2)
	bob.do("POST", "/v1/sessions", map[string]any{"language": "python"}).json(t, &b1)
	if a1.ID == "" || a2.ID == "" || b1.ID == "" {
		t.Fatalf("sessions not opened: %q %q %q", a1.ID, a2.ID, b1.ID)
	}
	for _, code := range []string{"1", "2"} {
		if r := alice.do("POST", "/v1/sessions/"+a1.ID+"/exec", map[string]any{"code": code}); r.status != http.StatusOK {
			t.Fatalf("exec: %d %s", r.status, r.body)
		}
	}

	var list struct{ Sessions []sessionInfo }
	r := alice.do("GET", "/v1/sessions", nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET /v1/sessions: %d %s", r.status, r.body)
	}
	r.json(t, &list)
	ids := map[string]sessionInfo{}
	for _, s := range list.Sessions {
		ids[s.ID] = s
	}
	if len(list.Sessions) != 2 || ids[a1.ID].ID == "" || ids[a2.ID].ID == "" {
		t.Fatalf("alice's list: %s; want her two sessions only", r.body)
	}
	got := ids[a1.ID]
	if got.Language != "python" || got.Image != "default" || got.Cells != 2 || got.Limits.MemoryBytes != 256<<20 ||
		got.CreatedAt.IsZero() || got.LastUsedAt.Before(got.CreatedAt) {
		t.Errorf("alice's first session: %+v; want python, image default, 2 cells, 256 MiB, times set", got)
	}

	r = alice.do("GET", "/v1/sessions/"+a1.ID, nil)
	var one sessionInfo
	r.json(t, &one)
	if r.status != http.StatusOK || one.ID != a1.ID || one.Cells != 2 {
		t.Errorf("GET /v1/sessions/%s: %d %s", a1.ID, r.status, r.body)
	}
	bob.do("GET", "/v1/sessions/"+a1.ID, nil).wantError(t, http.StatusNotFound, "not_found")
	alice.do("GET", "/v1/sessions/nope", nil).wantError(t, http.StatusNotFound, "not_found")

	if r := alice.do("DELETE", "/v1/sessions/"+a2.ID, nil); r.status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	alice.do("GET", "/v1/sessions/"+a2.ID, nil).wantError(t, http.StatusGone, "session_closed")
	list.Sessions = nil
	alice.do("GET", "/v1/sessions", nil).json(t, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].ID != a1.ID {
		t.Errorf("after closing one: %+v; want only %s", list.Sessions, a1.ID)
	}
}
