// Package lang describes how each supported language runs inside a sandbox:
// the interpreter, where the program file goes, the fixed environment, and
// how the interpreter's error report becomes a sandbox.ExecError. Every
// runtime (native, Docker) uses the same descriptions, so a program behaves
// the same on each.
package lang

import (
	"fmt"
	"slices"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// CodeDir is the read-only directory inside the sandbox that holds the
// program file. It is kept out of the working directory so that the user's
// files and the artifacts a run produces are only the user's own.
const CodeDir = "/code"

// WorkDir is the writable working directory inside the sandbox.
const WorkDir = "/work"

// HomeUser is, in every sandbox, a symbolic link to WorkDir: the home
// directory E2B's SDKs, and the code written for them, take for the
// working directory (files.write("/home/user/data.csv"),
// pd.read_csv("/home/user/data.csv")), reaching the same files.
const HomeUser = "/home/user"

// Spec describes one language.
type Spec struct {
	// Language is the language described.
	Language sandbox.Language
	// Interpreter is the interpreter's absolute path inside the sandbox.
	Interpreter string
	// MainFile is the program file's name inside CodeDir.
	MainFile string
	// Env is the language's fixed environment, added to the sandbox's.
	Env []string
	// ParseError turns the program's stderr into a structured error, or
	// returns nil when stderr holds none. mainPath is the program file's
	// path as the interpreter reports it. Nil for languages without one.
	ParseError func(stderr []byte, mainPath string) *sandbox.ExecError
	// ParseOnTimeout has ParseError read the stderr of a program that
	// reached its wall-time limit too: bash retries a refused fork until
	// then.
	ParseOnTimeout bool
}

// MainPath returns the program file's absolute path inside the sandbox.
func (s Spec) MainPath() string { return CodeDir + "/" + s.MainFile }

// Argv returns the command line that runs the program.
func (s Spec) Argv() []string { return []string{s.Interpreter, s.MainPath()} }

// BaseEnv returns the environment every sandboxed program starts from, in
// a slice of the caller's own. It names only sandbox paths: nothing of the
// host's environment is passed in.
func BaseEnv() []string { return slices.Clone(baseEnv) }

// baseEnv is what BaseEnv returns.
var baseEnv = []string{
	"PATH=/usr/local/bin:/usr/bin:/bin",
	"HOME=/tmp",
	"TMPDIR=/tmp",
	"LANG=C.UTF-8",
	"USER=sandbox",
}

var specs = map[sandbox.Language]Spec{
	sandbox.Python: {
		Language:    sandbox.Python,
		Interpreter: "/usr/bin/python3",
		MainFile:    "main.py",
		Env: []string{
			// The program file lives in CodeDir; this lets it import the
			// modules the user placed in the working directory.
			"PYTHONPATH=" + WorkDir,
			// The root is read-only; do not even try to write .pyc files.
			"PYTHONDONTWRITEBYTECODE=1",
			// stdout is a pipe: without this, prints reach a caller that
			// streams the output only when 8 KiB have gathered or the
			// program ends, and stdout and stderr lose their relative
			// order. A request may set it empty to buffer.
			"PYTHONUNBUFFERED=1",
			// No display exists: figures render off-screen.
			"MPLBACKEND=Agg",
			"MPLCONFIGDIR=/tmp/.matplotlib",
		},
		ParseError: ParsePythonError,
	},
	sandbox.JavaScript: {
		Language:    sandbox.JavaScript,
		Interpreter: "/usr/bin/node",
		MainFile:    "main.js",
		Env:         []string{"NODE_PATH=" + WorkDir},
		ParseError:  ParseJavaScriptError,
	},
	sandbox.Bash: {
		Language:       sandbox.Bash,
		Interpreter:    "/bin/bash",
		MainFile:       "main.sh",
		ParseError:     ParseBashError,
		ParseOnTimeout: true,
	},
}

// For returns the Spec of l, its Env a slice of the caller's own. It
// panics on a language that is not sandbox.Valid: requests are validated
// before they reach a runtime.
func For(l sandbox.Language) Spec {
	s, ok := specs[l]
	if !ok {
		panic(fmt.Sprintf("lang: no spec for language %q", l))
	}
	s.Env = slices.Clone(s.Env)
	return s
}

// Environ returns the full environment of a program in language l: the
// base, the language's own, the root filesystem's (such as a cache it
// prepared), then the request's variables; later ones override earlier.
func Environ(l sandbox.Language, image []string, extra map[string]string) []string {
	s := For(l)
	env := make([]string, 0, len(baseEnv)+len(s.Env)+len(image)+len(extra))
	env = append(env, baseEnv...)
	env = append(env, s.Env...)
	env = append(env, image...)
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	return dedupEnv(env)
}

// dedupEnv keeps the last value of each variable, in first-seen order.
func dedupEnv(env []string) []string {
	index := map[string]int{}
	out := env[:0:0]
	for _, kv := range env {
		k := kv
		for i := 0; i < len(kv); i++ {
			if kv[i] == '=' {
				k = kv[:i]
				break
			}
		}
		if i, ok := index[k]; ok {
			out[i] = kv
			continue
		}
		index[k] = len(out)
		out = append(out, kv)
	}
	return out
}
