// Command crucible-init is the sandbox's PID 1, built on its own so that
// starting a sandbox does not pay for the whole crucible binary: the
// runtime starts about 10 ms and 12 ms of CPU sooner than when crucible
// re-executes itself, and an idle warm sandbox holds a few MiB less.
//
// It is not installed or run by hand: scripts/setup.sh builds it first and
// then builds crucible with the build tag crucible_initexe, which embeds it
// (see package initexe). A crucible built without the tag re-executes
// itself instead, with the same code.
package main

import (
	"fmt"
	"os"

	// Its init function takes the process over when started as a
	// sandbox's init.
	_ "github.com/crucible-sandbox/crucible/sandbox/linux/sandboxinit"
)

func main() {
	fmt.Fprintln(os.Stderr, "crucible-init: this is the sandbox init that crucible embeds and starts; it is not run by hand")
	os.Exit(2)
}
