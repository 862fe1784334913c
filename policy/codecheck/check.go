package codecheck

import "github.com/crucible-sandbox/crucible/sandbox"

// CheckOnHost checks code in language l on the host, for the languages
// checked there (JavaScript, bash); ok is false for Python, whose code
// the sandbox checks (sandbox.Request.Rules).
func CheckOnHost(l sandbox.Language, code string, p *Preset) (found []sandbox.Finding, ok bool) {
	switch l {
	case sandbox.JavaScript:
		return CheckJavaScript(code, p), true
	case sandbox.Bash:
		return CheckBash(code, p), true
	}
	return nil, false
}
