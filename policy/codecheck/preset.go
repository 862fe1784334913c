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
// Evasion (the seed's patterns, by the syntax tree, not by text):
// getattr, setattr, delattr and hasattr with a literal dunder name;
// globals(), locals() and vars(); the attributes below on anything, and
// the name __builtins__; and the members that reach a blocked module
// without importing it: sys.modules (os is always loaded:
// sys.modules["os"].system), the frames of sys._getframe and
// inspect.currentframe, and the garbage collector's object lists.
var Strict = Preset{
	Name: "strict",
	PythonModules: []string{
		"os", "posix", "subprocess", "_posixsubprocess", "shutil", "socket", "_socket",
		"socketserver", "http", "urllib", "requests", "ftplib", "smtplib", "ctypes",
		"_ctypes", "pickle", "shelve", "importlib", "builtins", "pty", "multiprocessing",
	},
	PythonCalls:         []string{"eval", "exec", "compile", "__import__", "breakpoint"},
	PythonIntrospection: []string{"globals", "locals", "vars"},
	PythonAttributes: []string{
		"__builtins__", "__subclasses__", "__globals__", "__code__", "__closure__",
		"__bases__", "__base__", "__mro__", "__import__", "__loader__", "__getattribute__",
		"f_globals", "f_builtins", "f_locals",
	},
	PythonMembers: []string{
		"sys.modules", "sys._getframe", "inspect.currentframe", "inspect.stack",
		"gc.get_objects", "gc.get_referrers", "gc.get_referents",
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
