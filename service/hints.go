package service

import "github.com/crucible-sandbox/crucible/sandbox"

// Hinter writes the hint of a program's structured error
// (sandbox.ExecError.Hint) from facts the host knows, or "" for none;
// *hint.Hinter is one. l is the program's language, network the run's
// network policy as sandbox.Network.String gives it ("none", or the
// allowlist) and lim the limits applied.
type Hinter interface {
	Hint(l sandbox.Language, network string, lim sandbox.Limits, e *sandbox.ExecError) string
}

// addHint sets the hint of res's structured error, if res has one and
// img, where it ran, a Hinter. It comes after redaction: the hint is made from the
// error as every caller sees it, so what of it the hint repeats (a module
// name) is redacted already.
func addHint(res *sandbox.Result, img *Image, l sandbox.Language, network string) {
	if img.Hints != nil && res.Error != nil {
		res.Error.Hint = img.Hints.Hint(l, network, res.Limits, res.Error)
	}
}
