// Package policy holds the checks and transformations applied to code and
// results around a run: secret redaction of outputs here, and the static
// code policy in its subpackage codecheck (a seatbelt, never the
// boundary: the sandbox is).
package policy
