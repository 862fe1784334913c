package codecheck

// The rules a finding names (sandbox.Finding.Rule).
const (
	// RuleBlockedImport: an import of a blocked module.
	RuleBlockedImport = "blocked-import"
	// RuleBlockedCall: a call, or a use, of a blocked builtin.
	RuleBlockedCall = "blocked-call"
	// RuleDynamicImport: an import whose module name is computed at run
	// time, which no static check can follow.
	RuleDynamicImport = "dynamic-import"
	// RuleEvasionGetattr: getattr and its kin with a literal dunder name.
	RuleEvasionGetattr = "evasion-getattr"
	// RuleEvasionIntrospection: globals(), locals(), vars().
	RuleEvasionIntrospection = "evasion-introspection"
	// RuleEvasionAttribute: an attribute leading to the interpreter's
	// internals (__subclasses__, __globals__, f_globals...), or the name
	// __builtins__.
	RuleEvasionAttribute = "evasion-attribute"
	// RuleEvasionMember: a module member that reaches what the other
	// rules block: sys.modules (every loaded module, os included),
	// sys._getframe; in JavaScript process.binding, process.mainModule.
	RuleEvasionMember = "evasion-member"
	// RuleBlockedCommand: a bash command word naming a network tool.
	RuleBlockedCommand = "blocked-command"
	// RuleUncheckable: the code could not be checked (a parser's limit);
	// block mode then runs none of it.
	RuleUncheckable = "uncheckable"
)
