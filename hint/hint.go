// Package hint writes the hint of a program's structured error
// (sandbox.ExecError.Hint): a sentence or two on what the error means in
// this sandbox and what to do instead, for the person and for the model
// that reads it. A hint states only facts the host knows: the run's
// network policy, and which Python modules and Node.js packages the root
// filesystem the program ran in, and the other images of the store, hold.
// The program counts only as far as its error's type and message choose a
// rule; the one thing of them a hint repeats is a module name, checked to
// be one.
package hint

import (
	"fmt"
	"strings"
	"sync"

	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// offlineHint is the hint of an error of a program that tried the network
// in a sandbox that has none: how a run is given a host to reach, on the
// command line and through the API, and otherwise its data.
const offlineHint = "The network is off in this sandbox by policy: names do not resolve and no host outside can be reached. " +
	"To let a run reach a host: crucible run --allow HOST[:PORT], or \"network\": {\"allow\": [\"HOST[:PORT]\"]} in an API request, " +
	"on a server whose config sets \"allow_network\" for the tenant (sessions and analyses have no network). " +
	"Otherwise give the program its data as input files (the request's files; crucible run --file NAME=PATH)."

// processHint is the hint of an error of a program that could not start a
// process or thread: the run's limit, counted with %s (the limit, or "its
// limit" when unknown), and how to raise it.
const processHint = "The program could not start another process or thread: the run reached its process limit (%s; " +
	"processes and threads count together). Start fewer (a smaller pool, fewer workers), or raise the limit: " +
	"crucible run --pids N, or \"limits\": {\"processes\": N} in an API request (up to the server's maximum)."

// maxNamed is how many images a hint names before it counts the rest.
const maxNamed = 3

// Config says where the programs run.
type Config struct {
	// RootFS is the root filesystem the programs run in; empty for the
	// host's system directories.
	RootFS string
	// Image names the built image RootFS is, if it is one.
	Image string
	// Digest is that image's digest: a rebuilt image is looked at anew.
	Digest string
	// Store is the image store whose other images a hint names when they
	// have a module the program missed; empty names none.
	Store string
}

// Hinter writes hints for the programs run as its Config says. It keeps
// what it found in each image; it is safe for concurrent use.
type Hinter struct {
	cfg Config

	mu    sync.Mutex
	found map[string]*contents // by root and digest
}

// New returns a Hinter for cfg. It reads nothing until a hint needs it.
func New(cfg Config) *Hinter {
	return &Hinter{cfg: cfg, found: map[string]*contents{}}
}

// Hint returns the hint of e, the error of a program in language l run
// with the network policy network and the limits lim, or "" when there is
// none:
//   - the program tried to resolve a name or reach a host and the run has
//     no network: the network is off by policy, and how to allow a host;
//   - a fork or a new thread was refused (EAGAIN): the run's process
//     limit, lim.Processes, was reached, and how to raise it;
//   - a Python module or Node.js package is missing, and the root
//     filesystem the program ran in does not have it (when it does, a
//     submodule is missing, or the program raised the error itself): it is
//     not installed there, the sandbox cannot install it, and the images of
//     the store that have it are named.
func (h *Hinter) Hint(l sandbox.Language, network string, lim sandbox.Limits, e *sandbox.ExecError) string {
	if e == nil {
		return ""
	}
	offline := network == "" || network == sandbox.NetworkNone
	switch k, module := rule(l, e); k {
	case kindOffline:
		if offline {
			return offlineHint
		}
	case kindMissing:
		return h.missing(l, module, offline)
	case kindProcesses:
		limit := "its limit"
		if lim.Processes > 0 {
			limit = fmt.Sprintf("%d at once", lim.Processes)
		}
		return fmt.Sprintf(processHint, limit)
	}
	return ""
}

// Has reports whether the root filesystem the programs run in holds
// module, a top-level Python module or a Node.js package for language l
// (found as a missing one's hint finds it: by the directories the
// interpreters search). It reads the directories once per digest.
func (h *Hinter) Has(l sandbox.Language, module string) bool {
	root := h.cfg.RootFS
	if root == "" {
		root = "/"
	}
	return h.contents(root, h.cfg.Digest).has(l, module)
}

// missing is the hint of module, missing to a program in language l.
func (h *Hinter) missing(l sandbox.Language, module string, offline bool) string {
	if h.Has(l, module) {
		return ""
	}
	what := "Python module"
	if l == sandbox.JavaScript {
		what = "Node.js package"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q is not installed in %s", what, module, h.where())
	if offline {
		b.WriteString(", and the sandbox cannot install packages (it has no network)")
	}
	if h.cfg.Store == "" {
		b.WriteString(": use the libraries installed.")
		return b.String()
	}
	switch with := h.imagesWith(l, module); {
	case len(with) == 0:
		b.WriteString(". No other image in the store has it: use the libraries installed.")
	case len(with) == 1:
		fmt.Fprintf(&b, ". The %s image has it: --image %s.", with[0], with[0])
	default:
		fmt.Fprintf(&b, ". The %s images have it: --image %s.", list(with), with[0])
	}
	return b.String()
}

// where names the root filesystem the programs run in.
func (h *Hinter) where() string {
	switch {
	case h.cfg.Image != "":
		return "the " + h.cfg.Image + " image"
	case h.cfg.RootFS == "":
		return "the host's system directories"
	}
	return "this root filesystem"
}

// imagesWith returns the names of the store's images, other than the one
// the programs run in, that have module, in name order.
func (h *Hinter) imagesWith(l sandbox.Language, module string) []string {
	images, err := image.List(h.cfg.Store)
	if err != nil {
		return nil // a hint is advice: without the store, it names no image
	}
	var with []string
	for _, img := range images {
		if img.Name == h.cfg.Image || img.RootFS == h.cfg.RootFS {
			continue
		}
		if h.contents(img.RootFS, img.Digest).has(l, module) {
			with = append(with, img.Name)
		}
	}
	return with
}

// list joins names in English, counting those past maxNamed: "a, b, c
// and 2 more".
func list(names []string) string {
	if len(names) > maxNamed {
		return strings.Join(names[:maxNamed], ", ") + fmt.Sprintf(" and %d more", len(names)-maxNamed)
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// maxCached bounds the root filesystems a Hinter remembers; past it, it
// forgets them all (images rebuilt over a long life).
const maxCached = 64

// contents returns what root, of digest, holds: found once, then
// remembered.
func (h *Hinter) contents(root, digest string) *contents {
	key := root + "\x00" + digest
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.found[key]; ok {
		return c
	}
	if len(h.found) >= maxCached {
		clear(h.found)
	}
	c := scan(root)
	h.found[key] = c
	return c
}
