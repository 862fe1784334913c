package codecheck

import "github.com/crucible-sandbox/crucible/sandbox"

// CheckOnHost checks code in language l on the host, for the languages
// checked there (JavaScript, bash), under mode (warn or block: the
// findings' messages say what the mode does); ok is false for Python,
// whose code the sandbox checks (sandbox.Request.Rules).
func CheckOnHost(l sandbox.Language, code string, p *Preset, mode sandbox.PolicyMode) (found []sandbox.Finding, ok bool) {
	switch l {
	case sandbox.JavaScript:
		return CheckJavaScript(code, p, mode), true
	case sandbox.Bash:
		return CheckBash(code, p, mode), true
	}
	return nil, false
}

// blockedWords is what a finding says the policy does with what it names,
// under mode: in block mode the program "is blocked"; in warn mode it runs,
// and what it does "would be blocked". The sandbox's Python check says the
// same (kernel/python_policy.py).
func blockedWords(mode sandbox.PolicyMode) string {
	if mode == sandbox.PolicyBlock {
		return "is blocked"
	}
	return "would be blocked"
}
