// Package policy holds the checks and transformations applied to code and
// results around a run; today: secret redaction of outputs.
package policy
