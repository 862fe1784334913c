package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"

	units "github.com/docker/go-units"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// maxInputLine is the longest line the cell readers take.
const maxInputLine = 16 << 20

// Both cell readers are pulled by the session's loop: a line is read only
// when the previous cell is done, by the one reader of the input there is,
// so lines typed ahead wait in the terminal (or the reader's buffer) for
// their turn and none is lost. A reader yields ("", err) last when the
// input fails: errors.Is(err, bufio.ErrTooLong) for a line over
// maxInputLine, which is the input's fault.

// typedCells reads cells typed at a terminal: a line is a cell, and a line
// ending in ":" opens a block that an empty line closes. It shows its
// prompt on prompt when it wants a line.
func typedCells(in io.Reader, prompt io.Writer) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		sc := lineScanner(in)
		var block []string
		for {
			if len(block) > 0 {
				fmt.Fprint(prompt, "... ")
			} else {
				fmt.Fprint(prompt, ">>> ")
			}
			if !sc.Scan() {
				break
			}
			line := sc.Text()
			switch {
			case len(block) > 0 && strings.TrimSpace(line) == "":
				cell := strings.Join(block, "\n")
				block = nil
				if !yield(cell, nil) {
					return
				}
			case len(block) > 0 || strings.HasSuffix(strings.TrimSpace(line), ":"):
				block = append(block, line)
			case strings.TrimSpace(line) != "":
				if !yield(line, nil) {
					return
				}
			}
		}
		fmt.Fprintln(prompt)
		if err := sc.Err(); err != nil {
			yield("", inputErr(err))
			return
		}
		if len(block) > 0 {
			yield(strings.Join(block, "\n"), nil)
		}
	}
}

// pipedCells splits piped input at lines starting with "# %%"; colon
// commands stand alone on their line.
func pipedCells(in io.Reader) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		sc := lineScanner(in)
		var cell []string
		// flush yields the cell so far, unless it is blank; false means stop.
		flush := func() bool {
			text := strings.Join(cell, "\n")
			cell = nil
			return strings.TrimSpace(text) == "" || yield(text, nil)
		}
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "# %%"):
				if !flush() {
					return
				}
			case strings.HasPrefix(line, ":") && !strings.Contains(line, "="):
				if !flush() || !yield(line, nil) {
					return
				}
			default:
				cell = append(cell, line)
			}
		}
		if err := sc.Err(); err != nil {
			yield("", inputErr(err))
			return
		}
		flush()
	}
}

// lineScanner reads in's lines, up to maxInputLine bytes each.
func lineScanner(in io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxInputLine)
	return sc
}

// inputErr says which input failed, and how.
func inputErr(err error) error {
	if errors.Is(err, bufio.ErrTooLong) {
		return fmt.Errorf("standard input: a line is over %s; a cell holds at most %s: %w",
			units.BytesSize(maxInputLine), units.BytesSize(sandbox.MaxCodeBytes), err)
	}
	return fmt.Errorf("standard input: %w", err)
}
