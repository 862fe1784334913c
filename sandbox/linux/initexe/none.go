//go:build !crucible_initexe

package initexe

// embedded is empty without the build tag crucible_initexe: crucible then
// starts sandboxes from its own binary.
var embedded []byte
