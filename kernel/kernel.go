// Package kernel holds the session kernels: small driver programs, embedded
// in the binary and run inside a session's sandbox, that execute cells in
// one persistent interpreter and answer on a private channel. The wire
// protocol is JSON lines: a Request per cell from the host, a Reply per
// cell from the kernel, after a Ready message when the kernel starts.
package kernel

import (
	"bytes"
	"compress/zlib"
	_ "embed"
	"encoding/base64"
	"strconv"
	"sync"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// policySource is the static code policy's Python checker: its entry
// point, check_policy(code, rules), returns the findings (see package
// codecheck). The kernel calls it before a program or a cell runs.
//
//go:embed python_policy.py
var policySource string

//go:embed python_kernel.py
var kernelSource string

// notebookSource is what code written for notebooks expects: display(),
// "!" and "%" lines, open figures returned (see its docstring). The
// kernel holds it as a string, NB_SOURCE, and compiles it on first use
// (notebookBoot).
//
//go:embed python_notebook.py
var notebookSource string

// notebookBoot is the part of the notebook habits every kernel has: the
// loader of notebookSource, the display builtin, the savefig hook.
//
//go:embed python_notebook_boot.py
var notebookBoot string

// ipythonSource is the stand-in for IPython.display that code written
// for Jupyter imports, offered when the real IPython is not installed.
// The kernel holds it as IPY_SOURCE, compressed (packedSource), and
// decodes and compiles it on the first import of IPython (notebookBoot's
// NbIPythonFinder).
//
//go:embed python_ipython.py
var ipythonSource string

// pythonSource is PythonSource's text, built on first use: compressing
// the IPython stand-in costs a megabyte of allocations, which a process
// that never starts a kernel (most crucible commands) must not pay at
// its start.
var pythonSource = sync.OnceValue(func() string {
	return policySource + "\n\n" + notebookBoot + "\n\nNB_SOURCE = " + pythonString(notebookSource) +
		"\n\nIPY_SOURCE = " + pythonString(packedSource(ipythonSource)) + "\n\n" + kernelSource
})

// packedSource is s compressed with zlib, in base64: a string literal the
// interpreter reads at every kernel's start, and reads in a third of the
// time s's own literal takes (a cold run waits for it).
func packedSource(s string) string {
	var b bytes.Buffer
	w, _ := zlib.NewWriterLevel(&b, zlib.BestCompression) // a valid level: no error
	w.Write([]byte(s))                                    // into memory: no error
	w.Close()
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// PythonSource returns the Python kernel's program text: the policy
// checker, the notebook habits (the part always there, then the rest as
// a string), the IPython stand-in as a string, then the kernel, one file.
func PythonSource() string { return pythonSource() }

// pythonString quotes s as a Python string literal: Go's quoting, whose
// escapes (\n, \t, \", \\, \xNN, \uNNNN, \UNNNNNNNN) mean the same in
// Python, and s is valid UTF-8 (an embedded source file).
func pythonString(s string) string { return strconv.Quote(s) }

// PythonPath is where a session's sandbox holds the Python kernel.
const PythonPath = "/code/kernel.py"

// Request asks the kernel to run one cell.
type Request struct {
	// ID numbers the cell from 1; errors name the cell "<cell-ID>".
	ID int `json:"id"`
	// Code is the cell's source.
	Code string `json:"code"`
	// Token is fresh for each cell, and the cell's Reply must carry it.
	// It is no secret from the cell (the cell runs in the kernel's
	// process, which holds it): it makes a reply the host reads match the
	// request the kernel was given, so that a reply sent before the
	// request (for a later cell, by a guess of its ID) cannot pass for
	// that cell's.
	Token string `json:"token"`
	// Policy, when set, is checked against the cell before it runs (a
	// "blocked" Reply runs nothing).
	Policy *sandbox.CodeRules `json:"policy,omitempty"`
	// Context names the namespace the cell runs in (sandbox.Cell's
	// Context): "" the default one.
	Context string `json:"context,omitempty"`
	// ResetContext empties the context's namespace before the cell runs.
	ResetContext bool `json:"reset_context,omitempty"`
}

// NewRequest is the Request that runs cell as the session's cell n, its
// reply to carry token.
func NewRequest(n int, cell sandbox.Cell, token string) Request {
	return Request{ID: n, Code: cell.Code, Token: token, Policy: cell.Rules, Context: cell.Context, ResetContext: cell.ResetContext}
}

// Run asks the kernel to run a stateless program as __main__ and exit with
// its status, as `python3 /code/main.py` would. It is the last request.
type Run struct {
	// Op is "run".
	Op string `json:"op"`
	// Code is the program.
	Code string `json:"code"`
	// Env is added to the environment before the program starts.
	Env map[string]string `json:"env,omitempty"`
	// Limits are applied by the kernel to itself before the program
	// starts.
	Limits RunLimits `json:"limits"`
	// Policy, when set, is checked against the program before it runs:
	// the kernel then sends one Reply, status "checked" or "blocked", with
	// the findings, before it closes the channel; a blocked program never
	// runs and the kernel exits.
	Policy *sandbox.CodeRules `json:"policy,omitempty"`
}

// RunLimits are the rlimits of a stateless program in a warm kernel. They
// can only be lowered from the limits the kernel was started with.
type RunLimits struct {
	// CPUSeconds is the program's own CPU allowance; the kernel adds the
	// time it used before.
	CPUSeconds    int64 `json:"cpu_seconds"`
	FileSizeBytes int64 `json:"file_size_bytes"`
	OpenFiles     int64 `json:"open_files"`
}

// Setup makes a warm session kernel, started before its session was
// asked for, the session's: it is the first request such a kernel gets,
// and it answers with a Reply carrying Setup's ID (0) and Token, status
// "ok" or "error".
type Setup struct {
	// Op is "setup".
	Op    string `json:"op"`
	ID    int    `json:"id"`
	Token string `json:"token"`
	// Env is added to the kernel's environment.
	Env map[string]string `json:"env,omitempty"`
	// Limits are applied by the kernel to itself: lowered from those it
	// was started with.
	Limits SetupLimits `json:"limits"`
}

// SetupLimits are the rlimits of a session taken from the warm pool.
type SetupLimits struct {
	FileSizeBytes int64 `json:"file_size_bytes"`
	OpenFiles     int64 `json:"open_files"`
	Processes     int64 `json:"processes"`
}

// Ready is the kernel's first message.
type Ready struct {
	Ready  bool   `json:"ready"`
	Python string `json:"python"`
	// Preloaded lists the modules imported in advance (--preload).
	Preloaded []string `json:"preloaded,omitempty"`
	// Prefaulted is, for a zygote, how many pages of its memory the
	// run's own path writes, which each fork copies while it waits for
	// its run (python_kernel.py's learn_run_pages).
	Prefaulted int `json:"prefaulted,omitempty"`
}

// Reply is the kernel's answer to a Request.
type Reply struct {
	// ID and Token are the Request's.
	ID    int    `json:"id"`
	Token string `json:"token"`
	// Status is "ok" or "error"; "blocked" when the policy refused the
	// code (nothing ran), "checked" for a program the policy let run.
	Status string `json:"status"`
	// Findings are what the policy found in the code.
	Findings []sandbox.Finding `json:"findings,omitempty"`
	// Value is the repr of the cell's last expression, if not None.
	Value string `json:"value,omitempty"`
	// HTML is the last expression's _repr_html_(), such as a DataFrame's
	// table.
	HTML string `json:"html,omitempty"`
	// Error describes the exception that ended the cell.
	Error *Error `json:"error,omitempty"`
	// Displays are what the cell showed with display(), in order.
	Displays []Display `json:"displays,omitempty"`
	// Figures are the open matplotlib figures, as base64 PNG, each with
	// its labels in a text chunk (see ReadFigureLabels).
	Figures []string `json:"figures,omitempty"`
	// Fork is a zygote's report on the run it forked (a zygote's only
	// replies, beside an error).
	Fork *Fork `json:"fork,omitempty"`
}

// Fork is what a zygote (python_kernel.py's zygote) reports on a run: the
// child's pid, in the sandbox's PID namespace, once forked; then, once the
// child has ended, Exited and its wait status.
type Fork struct {
	Pid        int  `json:"pid,omitempty"`
	Exited     bool `json:"exited,omitempty"`
	WaitStatus int  `json:"wait_status,omitempty"`
}

// Error is an exception raised by a cell.
type Error struct {
	Type      string `json:"type"`
	Message   string `json:"message"`
	Line      int    `json:"line,omitempty"`
	Column    int    `json:"column,omitempty"`
	Traceback string `json:"traceback,omitempty"`
}
