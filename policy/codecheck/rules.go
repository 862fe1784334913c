package codecheck

// The rules a finding names (sandbox.Finding.Rule).
const (
	// RuleBlockedImport: an import of a blocked module.
	RuleBlockedImport = "blocked-import"
	// RuleBlockedCall: a call (or, in Python, a use) of a blocked builtin
	// or member.
	RuleBlockedCall = "blocked-call"
	// RuleDynamicImport: an import whose module name is computed at run
	// time, which no static check can follow.
	RuleDynamicImport = "dynamic-import"
	// RuleEvasionGetattr: getattr and its kin with a literal dunder name.
	RuleEvasionGetattr = "evasion-getattr"
	// RuleEvasionIntrospection: globals(), locals(), vars().
	RuleEvasionIntrospection = "evasion-introspection"
	// RuleEvasionDunder: an attribute leading to the interpreter's
	// internals (__subclasses__, __globals__, ...), or __builtins__.
	RuleEvasionDunder = "evasion-dunder"
	// RuleBlockedCommand: a bash command word naming a network tool.
	RuleBlockedCommand = "blocked-command"
	// RuleUncheckable: the code could not be checked (a parser's limit);
	// block mode then runs none of it.
	RuleUncheckable = "uncheckable"
)
