// Package sandboxinit is the sandbox side of the native runtime: the code
// that runs inside a fresh sandbox as its PID 1. It builds the root
// filesystem, applies the limits and filters, starts the program as the
// unprivileged user, reaps every process, and exits when the program does,
// which makes the kernel kill everything left in the sandbox.
//
// The host side (package linux) starts this code by executing
// crucible-init, or its own binary, with argv[0] set to Arg0; this
// package's init function then takes the process over. Host and sandbox
// talk over two private pipes with the messages in protocol.go. Nothing
// here trusts the program: the program starts only after every
// restriction is in place.
package sandboxinit
