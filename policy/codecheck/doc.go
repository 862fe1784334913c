// Package codecheck is the static code policy: checks of a program's
// source, before it runs, against a preset of blocked modules, calls and
// evasion patterns, with the modes off, warn and block
// (sandbox.PolicyMode).
//
// The policy is a seatbelt, never the boundary. It catches the plain ways
// in: an import of a blocked module, a call of a blocked builtin, the
// well-known evasions written literally, and the calls that take a name
// computed at run time (getattr(x, "ev"+"al") and its family,
// __import__("o"+"s"), as findings of their own). It cannot follow a
// value through the program (m = tempfile; m._os is the module os under
// a name it does not see), nor what a permitted library does for the
// program with a name or code given as data (logging.config resolving
// "ext://" names, unittest.mock.patch's targets, pandas.read_pickle,
// numpy.load(allow_pickle=True)). Whatever passes the
// check runs in the same sandbox as everything else: its own namespaces,
// no network, a read-only root, seccomp, and the limits. The policy turns
// an obvious mistake or a model's careless program into a clear "blocked"
// with the reason, early and cheaply; it protects nothing the sandbox does
// not.
//
// Where each language is checked:
//
//   - Python is parsed by Python's own ast module, inside the sandbox, by
//     the interpreter that will run the program, just before it runs it
//     (kernel.PolicySource; a runtime passes sandbox.Request.Rules to it).
//     A syntax error is not a finding: the program then fails with the
//     SyntaxError it has, as without a policy.
//   - JavaScript is parsed on the host by a real ECMAScript parser
//     (github.com/tdewolff/parse/v2/js), which bounds its own nesting;
//     code over MaxJavaScriptBytes is not parsed. CheckJavaScript.
//   - Bash is parsed on the host (mvdan.cc/sh) for a small list of network
//     tools used as command words, within MaxBashBytes and MaxNesting;
//     CheckBash says what it can and cannot see.
//
// Code a parser cannot read (too large, too deep, or not its syntax) is
// one "uncheckable" finding: block mode runs none of it.
package codecheck
