package e2bapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"slices"
	"sync"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// defaultContextID names the context a cell runs in when /execute names
// none: the session's own namespace.
const defaultContextID = "default"

// MaxContexts bounds the code contexts a sandbox holds besides its
// default one: the namespaces its session's kernel holds at most.
const MaxContexts = sandbox.MaxCellContexts

// codeContext is a code interpreter's context: a namespace of variables
// of its own in the sandbox's one interpreter (sandbox.Cell.Context),
// sharing its modules and files. It is no security boundary: a cell can
// reach every namespace of its interpreter, as every context of a sandbox
// belongs to the same caller.
type codeContext struct {
	ID       string `json:"id"`
	Language string `json:"language"`
	Cwd      string `json:"cwd"`

	executions int // cells run in it, the number_of_executions
}

// contextTable holds a sandbox's code contexts, the default first.
type contextTable struct {
	mu   sync.Mutex
	list []*codeContext
}

func newContextTable() contextTable {
	return contextTable{list: []*codeContext{{ID: defaultContextID, Language: string(sandbox.Python), Cwd: HomeDir}}}
}

// get returns the context id names, or nil.
func (t *contextTable) get(id string) *codeContext {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.list {
		if c.ID == id {
			return c
		}
	}
	return nil
}

// counted counts a cell run in c and returns its number.
func (t *contextTable) counted(c *codeContext) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	c.executions++
	return c.executions
}

// contextName is c's namespace in the session (sandbox.Cell.Context): ""
// (the session's own) for the default context, else its ID, which
// newContextID makes a valid name.
func contextName(c *codeContext) string {
	if c.ID == defaultContextID {
		return ""
	}
	return c.ID
}

// resetContext empties c's namespace in e's session, with a cell of no
// code that resets it: a restart, and, for a named context, the freeing
// of its place in the kernel until a cell uses it again.
func resetContext(ctx context.Context, e *sandboxEntry, c *codeContext) error {
	_, err := e.session().ExecRecorded(ctx, sandbox.Cell{Context: contextName(c), ResetContext: true})
	return err
}

// newContextID returns a new context's ID: 16 random hex digits, a valid
// context name for the kernel.
func newContextID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// checkLanguage checks a language E2B's SDK sends: Python, or "" for it.
// The sessions run Python only.
func checkLanguage(field, lang string) error {
	if sandbox.Language(lang).Canonical() != sandbox.Python {
		return invalid(field, "must be python (or absent): a Crucible sandbox's code interpreter runs Python only, got %q", cut(lang, 40))
	}
	return nil
}

// newContextBody is the body of POST /contexts.
type newContextBody struct {
	Language string `json:"language"`
	Cwd      string `json:"cwd"`
}

// createContext serves POST /contexts: a new context of the sandbox.
func (h *Handler) createContext(w http.ResponseWriter, r *http.Request) {
	e, err := h.sandboxOf(r)
	if err != nil {
		h.fail(w, "create context", err, nil)
		return
	}
	var body newContextBody
	payload, err := h.readJSON(w, r, e.tenant(), &body)
	if err != nil {
		h.fail(w, "read body", err, nil)
		return
	}
	defer payload.Release()
	if err := checkLanguage("language", body.Language); err != nil {
		h.fail(w, "create context", err, nil)
		return
	}
	if body.Cwd != "" && body.Cwd != HomeDir {
		writeError(w, invalid("cwd", "must be %s (or absent): every context runs in the sandbox's working directory, got %q", HomeDir, cut(body.Cwd, 200)))
		return
	}
	t := &e.contexts
	t.mu.Lock()
	if len(t.list)-1 >= MaxContexts {
		t.mu.Unlock()
		writeError(w, errorf(http.StatusTooManyRequests, "sandbox %s already has %d code contexts, the most it may; remove one first", e.id, MaxContexts))
		return
	}
	c := &codeContext{ID: newContextID(), Language: string(sandbox.Python), Cwd: HomeDir}
	t.list = append(t.list, c)
	t.mu.Unlock()
	writeJSON(w, http.StatusOK, c)
}

// listContexts serves GET /contexts: the sandbox's contexts, the default
// first.
func (h *Handler) listContexts(w http.ResponseWriter, r *http.Request) {
	e, err := h.sandboxOf(r)
	if err != nil {
		h.fail(w, "list contexts", err, nil)
		return
	}
	t := &e.contexts
	t.mu.Lock()
	list := make([]codeContext, len(t.list))
	for i, c := range t.list {
		list[i] = codeContext{ID: c.ID, Language: c.Language, Cwd: c.Cwd}
	}
	t.mu.Unlock()
	writeJSON(w, http.StatusOK, list)
}

// contextOf returns the context {id} names in e, or answers 404.
func contextOf(w http.ResponseWriter, r *http.Request, e *sandboxEntry) *codeContext {
	c := e.contexts.get(r.PathValue("id"))
	if c == nil {
		writeError(w, errorf(http.StatusNotFound, "code context %q not found in sandbox %s", cut(r.PathValue("id"), 80), e.id))
	}
	return c
}

// deleteContext serves DELETE /contexts/{id}; the default context stays.
func (h *Handler) deleteContext(w http.ResponseWriter, r *http.Request) {
	e, err := h.sandboxOf(r)
	if err != nil {
		h.fail(w, "delete context", err, nil)
		return
	}
	c := contextOf(w, r, e)
	if c == nil {
		return
	}
	if c.ID == defaultContextID {
		writeError(w, invalid("id", "must name a context made with POST /contexts: the default context cannot be removed"))
		return
	}
	// The context's namespace is emptied, which frees its place in the
	// kernel, before it is forgotten.
	if err := resetContext(r.Context(), e, c); err != nil {
		h.fail(w, "delete context", err, nil)
		return
	}
	t := &e.contexts
	t.mu.Lock()
	t.list = slices.DeleteFunc(t.list, func(x *codeContext) bool { return x == c })
	t.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// restartContext serves POST /contexts/{id}/restart.
func (h *Handler) restartContext(w http.ResponseWriter, r *http.Request) {
	e, err := h.sandboxOf(r)
	if err != nil {
		h.fail(w, "restart context", err, nil)
		return
	}
	c := contextOf(w, r, e)
	if c == nil {
		return
	}
	if err := resetContext(r.Context(), e, c); err != nil {
		h.fail(w, "restart context", err, nil)
		return
	}
	e.contexts.mu.Lock()
	c.executions = 0
	e.contexts.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}
