//go:build crucible_initexe

package initexe

import _ "embed" // for the go:embed directive

// embedded is crucible-init, built by scripts/setup.sh before crucible.
//
//go:embed crucible-init
var embedded []byte
