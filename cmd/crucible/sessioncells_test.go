package main

import (
	"bufio"
	"errors"
	"slices"
	"strings"
	"testing"
)

// promptLog records the prompts a cell reader shows, in one list with the
// cells it yields, to show which came first.
type promptLog struct{ events *[]string }

func (p promptLog) Write(b []byte) (int, error) {
	*p.events = append(*p.events, "prompt "+string(b))
	return len(b), nil
}

// TestTypedCells proves typed lines become cells, blocks included, and
// that the prompt for a line comes only once the previous cell is done.
func TestTypedCells(t *testing.T) {
	cases := []struct {
		typed string
		want  []string
	}{
		{"print(1)\nprint(2)\n", []string{"prompt >>> ", "cell print(1)", "prompt >>> ", "cell print(2)", "prompt >>> ", "prompt \n"}},
		{"def f():\n  return 1\n\n\n:ls\n", []string{"prompt >>> ", "prompt ... ", "prompt ... ", "cell def f():\n  return 1",
			"prompt >>> ", "prompt >>> ", "cell :ls", "prompt >>> ", "prompt \n"}},
		{"for i in x:\n  i", []string{"prompt >>> ", "prompt ... ", "prompt ... ", "prompt \n", "cell for i in x:\n  i"}},
	}
	for _, c := range cases {
		var events []string
		for cell, err := range typedCells(strings.NewReader(c.typed), promptLog{&events}) {
			if err != nil {
				t.Fatal(err)
			}
			events = append(events, "cell "+cell)
		}
		if !slices.Equal(events, c.want) {
			t.Errorf("%q:\n got %q\nwant %q", c.typed, events, c.want)
		}
	}
}

// TestPipedCells proves piped input is split at "# %%" lines and around
// colon commands, blank cells dropped.
func TestPipedCells(t *testing.T) {
	cases := []struct {
		piped string
		want  []string
	}{
		{"a = 1\nb = 2\n", []string{"a = 1\nb = 2"}},
		{"a = 1\n# %% load\nb = 2\n:ls\nc = 3\n\n# %%\n\n", []string{"a = 1", "b = 2", ":ls", "c = 3\n"}},
		{":x=1\n# %%\n", []string{":x=1"}},
		{"\n# %%\n", nil},
	}
	for _, c := range cases {
		var got []string
		for cell, err := range pipedCells(strings.NewReader(c.piped)) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, cell)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%q: got %q, want %q", c.piped, got, c.want)
		}
	}
}

// TestCellReadersLineTooLong proves a line over maxInputLine ends the
// cells with an error saying so, after the cells before it.
func TestCellReadersLineTooLong(t *testing.T) {
	long := strings.Repeat("x", maxInputLine+1) + "\n"
	for name, cells := range map[string]func() []string{
		"typed": func() []string {
			return drain(t, typedCells(strings.NewReader("print(1)\n"+long), promptLog{new([]string)}))
		},
		"piped": func() []string { return drain(t, pipedCells(strings.NewReader("print(1)\n# %%\n"+long))) },
	} {
		if got := cells(); len(got) != 2 || got[0] != "print(1)" || !strings.Contains(got[1], "a line is over 16MiB") {
			t.Errorf("%s: %.80q", name, got)
		}
	}
}

// drain returns the cells, then the error's text, that cells yields; the
// error must be bufio.ErrTooLong.
func drain(t *testing.T, cells func(func(string, error) bool)) []string {
	t.Helper()
	var got []string
	for cell, err := range cells {
		if err != nil {
			if !errors.Is(err, bufio.ErrTooLong) {
				t.Errorf("error %v, want bufio.ErrTooLong", err)
			}
			got = append(got, err.Error())
			continue
		}
		got = append(got, cell)
	}
	return got
}
