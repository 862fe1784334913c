package main

import (
	"fmt"
	"io"
	"os"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// stdinName is the name standing for standard input: `run -` and
// `--stdin -`.
const stdinName = "-"

// programStdin returns what `crucible run` feeds the program's standard
// input: the file --stdin names; standard input for --stdin -; and without
// --stdin, standard input when it is not a terminal and does not hold the
// program (as python -c and docker run -i read it), else nothing.
// programFromStdin says the program itself is read from standard input
// (run -).
//
// Reading is bounded by sandbox.MaxStdinBytes, whatever the input (a pipe
// that never ends, /dev/zero): more is an error naming --stdin and the rule.
func programStdin(flag string, programFromStdin bool) ([]byte, error) {
	switch {
	case flag == stdinName && programFromStdin:
		return nil, fmt.Errorf("--stdin -: standard input already holds the program (run -); give the program's input with --stdin FILE")
	case flag == stdinName:
		return readStdin()
	case flag != "":
		f, err := os.Open(flag)
		if err != nil {
			return nil, fmt.Errorf("--stdin: %w", err)
		}
		defer f.Close()
		return readAtMost(f, sandbox.MaxStdinBytes, "--stdin "+flag, "a program's standard input")
	case programFromStdin || isTerminal(os.Stdin):
		return nil, nil
	}
	return readStdin()
}

// readStdin reads standard input as the program's.
func readStdin() ([]byte, error) {
	return readAtMost(os.Stdin, sandbox.MaxStdinBytes, "--stdin (standard input)", "a program's standard input")
}

// readAtMost reads r to its end, refusing more than limit bytes with an
// error naming the flag, what the input is and the rule.
func readAtMost(r io.Reader, limit int64, flag, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: %s must be at most %d MiB (%d bytes); this is larger", flag, what, limit>>20, limit)
	}
	return b, nil
}
