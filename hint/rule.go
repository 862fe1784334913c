package hint

import (
	"regexp"
	"strings"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/lang"
)

// kind is the kind of hint an error calls for.
type kind int

const (
	// kindNone: no hint.
	kindNone kind = iota
	// kindOffline: the program tried the network.
	kindOffline
	// kindMissing: a module or package the program imports is missing.
	kindMissing
	// kindProcesses: a process or thread could not be started (EAGAIN):
	// the process limit.
	kindProcesses
)

// The bounds of the work an error causes: its message and traceback are
// the program's, of any size. Node.js prints the cause of an error
// ("fetch failed") at the end of its report.
const (
	// maxMessage is how much of the start of a message is read.
	maxMessage = 1024
	// maxTraceback is how much of the end of a traceback is read.
	maxTraceback = 4096
	// maxModule is the longest module name a hint repeats.
	maxModule = 128
)

var (
	// pyOffline matches the OS errors of a resolver or a socket with no
	// network, as Python reports them ("[Errno -3] ..."), whatever the
	// exception that carries them (socket.gaierror, OSError, URLError,
	// requests' ConnectionError).
	pyOffline = regexp.MustCompile(`\[Errno -?\d+\] (?:Temporary failure in name resolution|Name or service not known|No address associated with hostname|Network is unreachable|Connection refused|No route to host)`)
	// pyMissing matches a missing module's message.
	pyMissing = regexp.MustCompile(`^No module named '([^']*)'`)
	// pyModule is a dotted Python identifier (ASCII).
	pyModule = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$`)

	// pyEAGAIN matches the message of the OSError of a refused fork.
	pyEAGAIN = regexp.MustCompile(`^\[Errno 11\] Resource temporarily unavailable`)
	// pyFork matches, in a traceback, the calls that fork or spawn a
	// process (os.fork, subprocess's _fork_exec, multiprocessing's
	// popen_fork, os.posix_spawn): the EAGAIN of a non-blocking socket
	// or pipe is no process limit.
	pyFork = regexp.MustCompile(`fork|posix_spawn`)

	// jsOffline matches the system errors of Node.js's resolver and
	// sockets with no network.
	jsOffline = regexp.MustCompile(`\b(?:getaddrinfo|connect) (?:ENOTFOUND|EAI_AGAIN|EAI_FAIL|ECONNREFUSED|ENETUNREACH|EHOSTUNREACH)\b`)
	// jsSpawn matches child_process's error for a refused spawn
	// ("spawn sleep EAGAIN", "spawnSync /bin/sh EAGAIN").
	jsSpawn = regexp.MustCompile(`^spawn(?:Sync)? .*\bEAGAIN\b`)
	// jsMissing matches a missing module's message, of require or of an
	// ES module import.
	jsMissing = regexp.MustCompile(`^Cannot find (?:module|package) '([^']*)'`)
	// jsPackage is an npm package name, scoped or not, then any path in
	// the package.
	jsPackage = regexp.MustCompile(`^((?:@[A-Za-z0-9][\w.~-]*/)?[A-Za-z0-9][\w.~-]*)(?:/[^/]+)*$`)
)

// rule returns the kind of hint e, an error of a program in language l,
// calls for and, for a missing module, the module: the top-level Python
// module or the Node.js package.
func rule(l sandbox.Language, e *sandbox.ExecError) (kind, string) {
	msg := e.Message[:min(len(e.Message), maxMessage)]
	switch l {
	case sandbox.Python:
		if pyOffline.MatchString(msg) {
			return kindOffline, ""
		}
		tail := e.Traceback[max(0, len(e.Traceback)-maxTraceback):]
		if e.Type == "BlockingIOError" && pyEAGAIN.MatchString(msg) && pyFork.MatchString(tail) ||
			e.Type == "RuntimeError" && msg == "can't start new thread" {
			return kindProcesses, ""
		}
		if e.Type != "ModuleNotFoundError" && e.Type != "ImportError" {
			return kindNone, ""
		}
		if m := pyMissing.FindStringSubmatch(msg); m != nil && len(m[1]) <= maxModule && pyModule.MatchString(m[1]) {
			first, _, _ := strings.Cut(m[1], ".")
			return kindMissing, first
		}
	case sandbox.JavaScript:
		tail := e.Traceback[max(0, len(e.Traceback)-maxTraceback):]
		if jsOffline.MatchString(msg) || jsOffline.MatchString(tail) {
			return kindOffline, ""
		}
		if jsSpawn.MatchString(msg) {
			return kindProcesses, ""
		}
		if m := jsMissing.FindStringSubmatch(msg); m != nil && len(m[1]) <= maxModule {
			if p := jsPackage.FindStringSubmatch(m[1]); p != nil {
				return kindMissing, p[1]
			}
		}
	case sandbox.Bash:
		if e.Type == lang.BashForkType {
			return kindProcesses, ""
		}
	}
	return kindNone, ""
}
