package main

import (
	"errors"
	"fmt"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Exit codes of `crucible run`. A program that ran to its end passes its own
// exit code through; the other outcomes have codes of their own, so that
// scripts can tell a timeout from a program that failed.
const (
	exitUsage        = 2   // bad flags or an invalid request; nothing ran
	exitInternal     = 70  // the platform failed (EX_SOFTWARE)
	exitBlocked      = 120 // policy refused the code
	exitOutputLimit  = 121
	exitMemoryLimit  = 122
	exitCPULimit     = 123
	exitTimeout      = 124 // as GNU timeout(1)
	exitSignalOffset = 128 // killed by signal N: 128+N, as shells report it
)

// exitCodeError carries a process exit code out of a command.
type exitCodeError int

func (e exitCodeError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func asExitCode(err error, ec *exitCodeError) bool { return errors.As(err, ec) }

// exitCodeFor maps a Result to the CLI's exit code.
func exitCodeFor(res sandbox.Result) int {
	switch res.Status {
	case sandbox.StatusOK, sandbox.StatusError:
		if res.Signal != "" { // an error ended by a signal, such as SIGXFSZ
			return signalExitCode(res.Signal)
		}
		return res.ExitCode
	case sandbox.StatusTimeout:
		return exitTimeout
	case sandbox.StatusCPULimit:
		return exitCPULimit
	case sandbox.StatusMemoryLimit:
		return exitMemoryLimit
	case sandbox.StatusOutputLimit:
		return exitOutputLimit
	case sandbox.StatusBlocked:
		return exitBlocked
	case sandbox.StatusKilled:
		return signalExitCode(res.Signal)
	}
	return exitInternal
}

// signalExitCode returns 128+N for the signal named name (SIGKILL if the
// name is unknown), as shells report a process killed by a signal.
func signalExitCode(name string) int {
	if n, ok := sandbox.SignalNumber(name); ok { // Linux's: the sandbox's
		return exitSignalOffset + n
	}
	return exitSignalOffset + sandbox.SIGKILL
}
