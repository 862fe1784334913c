package e2bapi

import (
	"errors"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// EnvdVersion is the envd version every sandbox reports. E2B's SDKs
// choose their requests by it: from 0.4.0 they send no default user name
// (a Crucible sandbox has one user), from 0.5.2 they may close a
// command's stdin, and from 0.5.7 files.write may upload
// application/octet-stream, all of which this API serves. 0.6.2 and later
// would promise file metadata, which it does not keep.
const EnvdVersion = "0.5.7"

// clientID is the clientID of every sandbox: E2B's names the machine that
// runs it, and the SDKs require the field.
const clientID = "crucible"

// The templates E2B's SDKs create by default, and the images they become.
const (
	// TemplateCodeInterpreter (@e2b/code-interpreter's default) runs in
	// the service's session default image: the data-science one when the
	// server offers it.
	TemplateCodeInterpreter = "code-interpreter-v1"
	// TemplateBase (e2b's default) runs in the service's default image.
	TemplateBase = "base"
)

// Bounds of a sandbox's settings.
const (
	// DefaultTimeout is a sandbox's life when its request names none.
	DefaultTimeout = 300 * time.Second
	// MinTimeout and MaxTimeout bound a sandbox's timeout.
	MinTimeout = time.Second
	MaxTimeout = 24 * time.Hour
	// MaxMetadata bounds a sandbox's metadata entries, and
	// MaxMetadataKey and MaxMetadataValue their sizes in bytes.
	MaxMetadata      = 64
	MaxMetadataKey   = 256
	MaxMetadataValue = 2048
)

// newSandbox is the body of POST /sandboxes. The options E2B has and a
// Crucible sandbox cannot honour are read so that asking for them is
// refused, not ignored.
type newSandbox struct {
	TemplateID          string            `json:"templateID"`
	Timeout             *int64            `json:"timeout"`
	Metadata            map[string]string `json:"metadata"`
	EnvVars             map[string]string `json:"envVars"`
	Secure              *bool             `json:"secure"` // always: the data plane needs the token
	AllowInternetAccess *bool             `json:"allow_internet_access"`
	AutoPause           *bool             `json:"autoPause"`
	AutoResume          jsontext.Value    `json:"autoResume"`
	Network             jsontext.Value    `json:"network"`
	MCP                 jsontext.Value    `json:"mcp"`
	IAM                 jsontext.Value    `json:"iam"`
	VolumeMounts        jsontext.Value    `json:"volumeMounts"`
}

// sandboxJSON answers a create or connect: how to reach the sandbox.
type sandboxJSON struct {
	TemplateID         string `json:"templateID"`
	SandboxID          string `json:"sandboxID"`
	ClientID           string `json:"clientID"`
	EnvdVersion        string `json:"envdVersion"`
	EnvdAccessToken    string `json:"envdAccessToken"`
	TrafficAccessToken string `json:"trafficAccessToken"`
}

// sandboxDetail describes a sandbox (GET /sandboxes/{id}, and each item
// of a listing). Its access token is not in it: only create and connect
// hand that out.
type sandboxDetail struct {
	TemplateID   string            `json:"templateID"`
	SandboxID    string            `json:"sandboxID"`
	ClientID     string            `json:"clientID"`
	StartedAt    time.Time         `json:"startedAt"`
	EndAt        time.Time         `json:"endAt"`
	EnvdVersion  string            `json:"envdVersion"`
	CPUCount     int               `json:"cpuCount"`
	MemoryMB     int64             `json:"memoryMB"`
	DiskSizeMB   int64             `json:"diskSizeMB"`
	Metadata     map[string]string `json:"metadata"`
	State        string            `json:"state"`
	VolumeMounts []struct{}        `json:"volumeMounts"`
}

// timeoutBody is the body of /timeout and /connect.
type timeoutBody struct {
	Timeout *int64 `json:"timeout"`
}

// renameFields maps the service's field names to this API's.
var renameFields = map[string]string{"env": "envVars", "image": "templateID"}

// authenticate returns the tenant of a control-plane request, or answers
// 401 (or 500) and reports false.
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request) (string, bool) {
	tenant, err := h.auth(r.Context(), r.Header.Get("X-API-Key"))
	if err == nil {
		return tenant, true
	}
	if errors.Is(err, ErrUnauthorized) {
		writeError(w, &apiError{Code: http.StatusUnauthorized, Message: err.Error(), Field: "X-API-Key", Rule: "must hold a valid API key of this server"})
		return "", false
	}
	h.fail(w, "authenticate", err, nil)
	return "", false
}

// ownSandbox returns the caller's sandbox the path's {id} names, or
// answers 401 or 404 and reports false.
func (h *Handler) ownSandbox(w http.ResponseWriter, r *http.Request) (*sandboxEntry, bool) {
	tenant, ok := h.authenticate(w, r)
	if !ok {
		return nil, false
	}
	id := r.PathValue("id")
	e := h.alive(tenant, id)
	if e == nil {
		writeError(w, errorf(http.StatusNotFound, "sandbox %q not found", id))
		return nil, false
	}
	return e, true
}

// createSandbox serves POST /sandboxes (and /v2/sandboxes): a session of
// the caller's tenant, within its share of sessions.
func (h *Handler) createSandbox(w http.ResponseWriter, r *http.Request) {
	tenant, ok := h.authenticate(w, r)
	if !ok {
		return
	}
	var req newSandbox
	payload, err := h.readJSON(w, r, tenant, &req)
	if err != nil {
		h.fail(w, "read body", err, nil)
		return
	}
	defer payload.Release()
	timeout, err := req.check()
	if err != nil {
		h.fail(w, "create sandbox", err, nil)
		return
	}
	image, err := h.imageOf(req.TemplateID)
	if err != nil {
		h.fail(w, "create sandbox", err, nil)
		return
	}
	sess, err := h.svc.OpenSession(r.Context(), tenant, sandbox.SessionRequest{Image: image, Env: req.EnvVars}, service.SessionOptions{})
	if err != nil {
		h.fail(w, "open session", err, renameFields)
		return
	}
	e := &sandboxEntry{id: sess.ID(), owner: tenant, templateID: req.TemplateID, sess: sess, token: newToken(),
		env: req.EnvVars, metadata: req.Metadata, startedAt: time.Now()}
	h.register(e, timeout)
	writeJSON(w, http.StatusCreated, e.reach())
}

// reach is what a client needs to reach e.
func (e *sandboxEntry) reach() sandboxJSON {
	return sandboxJSON{TemplateID: e.templateID, SandboxID: e.id, ClientID: clientID, EnvdVersion: EnvdVersion,
		EnvdAccessToken: e.token, TrafficAccessToken: e.token}
}

// detail describes e.
func (e *sandboxEntry) detail() sandboxDetail {
	lim := e.sess.Info().Limits
	meta := e.metadata
	if meta == nil {
		meta = map[string]string{}
	}
	return sandboxDetail{TemplateID: e.templateID, SandboxID: e.id, ClientID: clientID, StartedAt: e.startedAt.UTC(),
		EndAt: e.end().UTC(), EnvdVersion: EnvdVersion, CPUCount: runtime.NumCPU(), MemoryMB: lim.MemoryBytes / sandbox.MiB,
		DiskSizeMB: lim.DiskBytes / sandbox.MiB, Metadata: meta, State: "running", VolumeMounts: []struct{}{}}
}

// check validates a new sandbox's request and returns its timeout.
func (req *newSandbox) check() (time.Duration, error) {
	if req.TemplateID == "" {
		return 0, invalid("templateID", "is required: %s, %s or the name of an image of this server", TemplateCodeInterpreter, TemplateBase)
	}
	timeout := DefaultTimeout
	if req.Timeout != nil {
		var err error
		if timeout, err = timeoutOf(*req.Timeout); err != nil {
			return 0, err
		}
	}
	if len(req.Metadata) > MaxMetadata {
		return 0, invalid("metadata", "must have at most %d entries, got %d", MaxMetadata, len(req.Metadata))
	}
	for k, v := range req.Metadata {
		if len(k) == 0 || len(k) > MaxMetadataKey || len(v) > MaxMetadataValue {
			return 0, invalid("metadata", "keys must be 1 to %d bytes and values at most %d bytes; %q is not", MaxMetadataKey, MaxMetadataValue, cut(k, 40))
		}
	}
	switch {
	case req.AllowInternetAccess != nil && *req.AllowInternetAccess:
		return 0, invalid("allow_internet_access", "must be false or absent: a Crucible sandbox has no network")
	case given(req.Network):
		return 0, invalid("network", "must be absent: a Crucible sandbox has no network to configure")
	case req.AutoPause != nil && *req.AutoPause, given(req.AutoResume):
		return 0, invalid("autoPause", "must be false or absent: a Crucible sandbox cannot be paused; it is killed when its timeout passes")
	case given(req.MCP):
		return 0, invalid("mcp", "must be absent: Crucible runs no MCP gateway in a sandbox")
	case given(req.IAM):
		return 0, invalid("iam", "must be absent: a Crucible sandbox gets no cloud identity")
	case given(req.VolumeMounts) && string(req.VolumeMounts) != "[]":
		return 0, invalid("volumeMounts", "must be absent: a Crucible sandbox mounts no volumes; write files with files.write")
	}
	return timeout, nil
}

// given reports whether an optional JSON value was sent, null aside.
func given(v jsontext.Value) bool { return len(v) > 0 && string(v) != "null" }

// timeoutOf checks a timeout in seconds.
func timeoutOf(seconds int64) (time.Duration, error) {
	lo, hi := int64(MinTimeout/time.Second), int64(MaxTimeout/time.Second)
	if seconds < lo || seconds > hi {
		return 0, invalid("timeout", "must be %d to %d seconds (24 hours), got %d", lo, hi, seconds)
	}
	return time.Duration(seconds) * time.Second, nil
}

// imageOf returns the image a templateID runs in.
func (h *Handler) imageOf(templateID string) (string, error) {
	list := h.svc.Images()
	switch templateID {
	case TemplateCodeInterpreter:
		return list.SessionDefault, nil
	case TemplateBase:
		return list.Default, nil
	}
	names := make([]string, len(list.Images))
	for i, img := range list.Images {
		if img.Name == templateID {
			return img.Name, nil
		}
		names[i] = img.Name
	}
	return "", invalid("templateID", "must be %s (the %s image), %s (the %s image) or an image of this server (%s), got %q",
		TemplateCodeInterpreter, list.SessionDefault, TemplateBase, list.Default, strings.Join(names, ", "), cut(templateID, 80))
}

// cut shortens s to n bytes for a message.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// getSandbox serves GET /sandboxes/{id}.
func (h *Handler) getSandbox(w http.ResponseWriter, r *http.Request) {
	e, ok := h.ownSandbox(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, e.detail())
}

// killSandbox serves DELETE /sandboxes/{id}: 204 once the sandbox is
// unreachable (every request for it is then a 404 or 502); its session
// is closed after the answer, since destroying a sandbox (its processes,
// cgroup and mounts) takes tens of milliseconds no caller needs to wait
// for. Until it is closed it still counts in the tenant's share.
func (h *Handler) killSandbox(w http.ResponseWriter, r *http.Request) {
	e, ok := h.ownSandbox(w, r)
	if !ok {
		return
	}
	if h.detach(e) {
		defer func() { go h.closeSession(e) }()
	}
	w.WriteHeader(http.StatusNoContent)
}

// setTimeout serves POST /sandboxes/{id}/timeout: the sandbox ends
// timeout seconds from now.
func (h *Handler) setTimeout(w http.ResponseWriter, r *http.Request) {
	e, ok := h.ownSandbox(w, r)
	if !ok {
		return
	}
	d, given, ok := h.readTimeout(w, r, e)
	if !ok {
		return
	}
	if !given {
		writeError(w, invalid("timeout", "is required: the seconds from now the sandbox is to live"))
		return
	}
	if !e.extend(d, false) {
		writeError(w, errorf(http.StatusNotFound, "sandbox %q not found", e.id))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// readTimeout reads the body of a timeout or connect call: the timeout it
// gives, if given (checked by timeoutOf). When ok is false the answer was
// written.
func (h *Handler) readTimeout(w http.ResponseWriter, r *http.Request, e *sandboxEntry) (d time.Duration, given, ok bool) {
	var body timeoutBody
	payload, err := h.readJSON(w, r, e.tenant(), &body)
	if err != nil {
		h.fail(w, "read body", err, nil)
		return 0, false, false
	}
	payload.Release() // the body is decoded: nothing of it is held
	if body.Timeout == nil {
		return 0, false, true
	}
	if d, err = timeoutOf(*body.Timeout); err != nil {
		h.fail(w, "timeout", err, nil)
		return 0, false, false
	}
	return d, true, true
}

// connectSandbox serves POST /sandboxes/{id}/connect (and /v2/...): how
// to reach a running sandbox; a timeout in the body lengthens its life
// (never shortens it).
func (h *Handler) connectSandbox(w http.ResponseWriter, r *http.Request) {
	e, ok := h.ownSandbox(w, r)
	if !ok {
		return
	}
	d, given, ok := h.readTimeout(w, r, e)
	if !ok {
		return
	}
	if given && !e.extend(d, true) {
		writeError(w, errorf(http.StatusNotFound, "sandbox %q not found", e.id))
		return
	}
	writeJSON(w, http.StatusOK, e.reach())
}

// listSandboxes serves GET /v2/sandboxes (and the older /sandboxes): the
// caller's running sandboxes, oldest first, filtered by ?metadata= (an
// URL-encoded key=value list; every pair must match) and ?state= (a
// Crucible sandbox is always running), in pages of ?limit= whose next
// page ?nextToken= names (the X-Next-Token header).
func (h *Handler) listSandboxes(w http.ResponseWriter, r *http.Request) {
	tenant, ok := h.authenticate(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	want, err := url.ParseQuery(q.Get("metadata"))
	if err != nil {
		writeError(w, invalid("metadata", "must be URL-encoded key=value pairs: %v", err))
		return
	}
	running := true
	if states := q["state"]; len(states) > 0 {
		running = false
		for _, s := range strings.Split(strings.Join(states, ","), ",") {
			running = running || s == "running"
		}
	}
	limit, start := 100, 0
	if s := q.Get("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit < 1 || limit > 1000 {
			writeError(w, invalid("limit", "must be an integer from 1 to 1000, got %q", cut(s, 20)))
			return
		}
	}
	if s := q.Get("nextToken"); s != "" {
		if start, err = strconv.Atoi(s); err != nil || start < 0 {
			writeError(w, invalid("nextToken", "must be a token of X-Next-Token, got %q", cut(s, 20)))
			return
		}
	}
	list := []sandboxDetail{}
	if running {
		for _, e := range h.sandboxes.of(tenant) {
			if h.alive(tenant, e.id) != nil && matches(e.metadata, want) {
				list = append(list, e.detail())
			}
		}
	}
	if start > len(list) {
		start = len(list)
	}
	end := min(start+limit, len(list))
	if end < len(list) {
		w.Header().Set("X-Next-Token", strconv.Itoa(end))
	}
	writeJSON(w, http.StatusOK, list[start:end])
}

// matches reports whether meta holds every pair of want.
func matches(meta map[string]string, want url.Values) bool {
	for k, vs := range want {
		for _, v := range vs {
			if meta[k] != v {
				return false
			}
		}
	}
	return true
}
