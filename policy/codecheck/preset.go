package codecheck

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Preset is a named set of rules.
type Preset struct {
	// Name names the preset in requests and messages.
	Name string
	// PythonModules may not be imported (nor their submodules).
	PythonModules []string
	// PythonCalls are builtins that may not be called nor named.
	PythonCalls []string
	// PythonIntrospection are calls that reach a namespace by name.
	PythonIntrospection []string
	// PythonAttributes are attributes that lead to the interpreter's
	// internals, as attributes or as getattr's literal name.
	PythonAttributes []string
	// PythonMembers are module members ("sys.modules") that reach what
	// the other rules block.
	PythonMembers []string
	// JSModules may not be required nor imported ("node:" prefix or not).
	JSModules []string
	// JSMembers are members that reach node's internals or its module
	// loader ("process.binding"), read or called.
	JSMembers []string
	// BashCommands are the command words refused in bash.
	BashCommands []string
}

// Strict is the built-in preset, after the seed documents' list.
//
// Python modules: the seed's (os, subprocess, shutil, socket, http,
// urllib, requests, ftplib, smtplib, ctypes, pickle, shelve, importlib),
// the C cores of some of them (posix, _posixsubprocess, _socket, _ctypes;
// blocking os without posix is no block at all), and builtins, pty,
// multiprocessing and socketserver, the other plain ways to a process, a
// socket or a blocked builtin. Not sys: nearly every program reads
// sys.argv, sys.exit or sys.stdout, and sys reaches nothing the sandbox
// allows that the blocked modules do not. Not io nor pathlib: files are
// how a program reads its input and writes its artifacts, and the sandbox
// bounds them.
//
// Python calls: the seed's eval, exec, compile and __import__ (and
// breakpoint). Not open, which the seed lists: open is how a data program
// reads its input and writes its results, and pandas or pathlib do the
// same without it; the filesystem the program sees is the sandbox's.
//
// More Python modules, each a way to run a string as code, to reach an
// object or a module by its name, or to start a program: marshal (code
// objects from bytes), inspect (frames, getattr_static, getmembers,
// getclosurevars), pdb, runpy, timeit, cProfile, doctest and codeop (run
// or compile strings), pydoc and pkgutil (locate and resolve_name: any
// object by its dotted name; pydoc's pager runs a shell), zipimport and
// _imp (the import machinery), webbrowser (runs programs). A blocked
// module is also blocked as an attribute of anything, under its name or
// a private alias (pandas.io.common.os, tempfile._os, glob.os: os is
// reached without importing it), and as a name imported from another
// module (from tempfile import _os): an attribute or a column so named
// is flagged too (write df["os"]). Modules whose name is an everyday
// attribute (code: e.code; profile) are blocked by their members instead.
//
// Evasion (the seed's patterns, by the syntax tree, not by text):
// getattr, setattr, delattr, operator.attrgetter and methodcaller with a
// literal dunder, blocked or module name; the same with a name computed
// at run time ("_"+"_import__"), or named as a value instead of called
// (g = getattr, reduce(getattr, ...)), which no static check can follow;
// globals(), locals() and vars(); the attributes below on anything, the
// name __builtins__, and a string literal naming a blocked dunder (the
// fields of str.format and string.Formatter.get_field walk them); and
// the members that reach a blocked module or what it does without
// importing it, on the module by any path (import sys as s, x.sys,
// tempfile._sys): sys.modules (os is always loaded:
// sys.modules["os"].system) and the importers of sys.meta_path, the
// frames of sys._getframe, the garbage collector's object lists,
// types.CodeType, string.Formatter, code's and profile's interpreters,
// numpy's ctypeslib.load_library (a C library's functions) and asyncio's
// subprocesses.
//
// The attributes, each from any object to what the modules reach:
// builtins (__self__ of any builtin function is the builtins module:
// getattr(print.__self__, "__import__"); enum.bltns; __builtins__), the
// other names under which the datascience image's libraries hold a
// blocked module (mp and reducer: multiprocessing and its pickler, pkl:
// pickle, pdoctest: doctest; found by listing every loaded module's
// module-valued attributes after importing pandas, numpy, matplotlib,
// scipy, sklearn, statsmodels, seaborn, sympy, networkx and openpyxl),
// a function's namespace (__globals__, __closure__, __func__ of a
// method, __dict__ of anything: module.__dict__["os"] is getattr by
// another name), the class graph that reaches every loaded class
// (__subclasses__, __bases__, __base__, __mro__, __getattribute__),
// frames (f_back, f_globals, f_locals, f_builtins; tb_frame, gi_frame,
// cr_frame, ag_frame give one), code objects (__code__, f_code, gi_code,
// cr_code, ag_code; a code object is any program, run by
// type(f)(code, {})), the import machinery (__loader__, __spec__) and an
// event loop's subprocesses. Not __class__ nor __name__: obj.__class__ is
// type(obj), which any program may call, and df.__class__.__name__ is
// common; what leads on from a class (its bases, subclasses, mro, dict)
// is what is blocked. Not the co_* attributes: the check blocks the
// routes to a code object rather than what one holds.
var Strict = Preset{
	Name: "strict",
	PythonModules: []string{
		"os", "posix", "subprocess", "_posixsubprocess", "shutil", "socket", "_socket",
		"socketserver", "http", "urllib", "requests", "ftplib", "smtplib", "ctypes",
		"_ctypes", "pickle", "shelve", "importlib", "builtins", "pty", "multiprocessing",
		"marshal", "inspect", "pdb", "runpy", "timeit", "cProfile", "doctest", "codeop",
		"pydoc", "pkgutil", "zipimport", "_imp", "webbrowser",
	},
	PythonCalls:         []string{"eval", "exec", "compile", "__import__", "breakpoint"},
	PythonIntrospection: []string{"globals", "locals", "vars"},
	PythonAttributes: []string{
		"__builtins__", "__self__", "bltns", "__import__", "mp", "pkl", "reducer", "pdoctest",
		"__globals__", "__closure__", "__func__", "__dict__",
		"__subclasses__", "__bases__", "__base__", "__mro__", "__getattribute__",
		"f_back", "f_globals", "f_locals", "f_builtins", "tb_frame", "gi_frame", "cr_frame", "ag_frame",
		"__code__", "f_code", "gi_code", "cr_code", "ag_code",
		"__loader__", "__spec__",
		"subprocess_exec", "subprocess_shell",
	},
	PythonMembers: []string{
		"sys.modules", "sys.meta_path", "sys.path_hooks", "sys.path_importer_cache",
		"sys._getframe", "sys._current_frames",
		"gc.get_objects", "gc.get_referrers", "gc.get_referents",
		"types.CodeType", "string.Formatter",
		"code.interact", "code.InteractiveInterpreter", "code.InteractiveConsole", "code.compile_command",
		"profile.run", "profile.runctx", "profile.Profile",
		"ctypeslib.load_library",
		"asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell",
	},
	JSModules: []string{
		"child_process", "cluster", "dgram", "dns", "fs", "fs/promises", "http", "http2", "https",
		"inspector", "module", "net", "os", "process", "repl", "tls", "v8", "vm", "wasi",
		"worker_threads",
	},
	JSMembers: []string{"process.binding", "process._linkedBinding", "process.dlopen", "process.mainModule",
		"module.constructor", "require.cache"},
	BashCommands: []string{"curl", "wget", "nc", "ncat", "netcat", "socat", "ssh", "scp", "sftp", "telnet", "ftp", "rsync"},
}

// presets are the presets a request may name.
var presets = map[string]*Preset{Strict.Name: &Strict}

// DefaultPreset names the preset of a policy that names none.
const DefaultPreset = "strict"

// Lookup returns the preset called name ("" is DefaultPreset), or an
// *sandbox.InputError naming field and the presets there are.
func Lookup(field, name string) (*Preset, error) {
	if name == "" {
		name = DefaultPreset
	}
	if p, ok := presets[name]; ok {
		return p, nil
	}
	return nil, &sandbox.InputError{Field: field, Rule: "must name a preset, one of " + strings.Join(PresetNames(), ", ") + "; got " + strconv.Quote(name)}
}

// PresetNames lists the presets' names in order.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Rules returns the rules the sandbox checks Python code against under
// mode; nil for PolicyOff.
func (p *Preset) Rules(mode sandbox.PolicyMode) *sandbox.CodeRules {
	if mode.Rank() <= sandbox.PolicyOff.Rank() {
		return nil
	}
	return &sandbox.CodeRules{
		Mode: mode, Preset: p.Name,
		Modules: slices.Clone(p.PythonModules), Calls: slices.Clone(p.PythonCalls),
		Introspection: slices.Clone(p.PythonIntrospection), Attributes: slices.Clone(p.PythonAttributes),
		Members: slices.Clone(p.PythonMembers),
	}
}
