package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// testSessionContexts: the cells of a session run in named contexts
// (Cell.Context), each with variables of its own and the files of all.
// A variable set in one context is seen neither in another nor in the
// default; each keeps its own; a file one writes the other reads; the
// notebook habits ("!" lines' _exit_code, %who), the last expression
// and errors act in the cell's context (the code policy too: a cell's
// Rules, which only a runtime's own caller sets, are checked in
// sandbox/linux's TestContextsPolicy, the kernel being the same for
// every runtime); ResetContext
// empties one context and leaves the others; a context past the
// session's MaxCellContexts fails that cell alone (the session goes on,
// and a reset frees a place); a bad name is refused as input.
func testSessionContexts(t *testing.T, s *suite) {
	ses := s.sessionOf(t, sandbox.Limits{})
	ok := func(cell sandbox.Cell, want string) {
		t.Helper()
		res, err := execCell(t, ses, cell)
		if err != nil {
			t.Fatalf("context %q, cell %q: %v", cell.Context, cell.Code, err)
		}
		if res.Status != sandbox.StatusOK || res.Value != want {
			t.Fatalf("context %q, cell %q: want value %s, got %s", cell.Context, cell.Code, want, describeCell(res))
		}
	}
	in := func(ctx, code string) sandbox.Cell { return sandbox.Cell{Context: ctx, Code: code} }

	ok(in("a", "x = 'a'\nopen('from_a.txt', 'w').write('written in a')\nx"), "'a'")
	ok(in("b", "'x' in globals()"), "False")
	ok(in("", "'x' in globals()"), "False")
	ok(in("b", "x = 'b'\nopen('from_a.txt').read()"), "'written in a'")
	ok(in("", "x = 'default'\nimport os\nos.path.exists('from_a.txt')"), "True")
	ok(in("a", "x"), "'a'")
	ok(in("b", "x"), "'b'")
	ok(in("", "x"), "'default'")
	// The last expression's value is "_" in its own context only.
	ok(in("a", "_"), "'a'")
	ok(in("b", "_"), "'b'")
	// The notebook habits act on the cell's context.
	ok(in("a", "!true\n_exit_code"), "0")
	ok(in("", "'_exit_code' in globals()"), "False")
	res, err := execCell(t, ses, in("b", "%who"))
	if err != nil || res.Status != sandbox.StatusOK || strings.TrimSpace(string(res.Stdout)) != "x" {
		t.Fatalf("%%who in context b: want the names of b alone (x), got err %v, %s", err, describeCell(res))
	}
	// An error in a context is a cell's error, with its traceback.
	res, err = execCell(t, ses, in("a", "def f():\n    return 1 / 0\nf()"))
	if err != nil || res.Status != sandbox.StatusError || res.Error == nil || res.Error.Type != "ZeroDivisionError" ||
		res.Error.Line != 2 || !strings.Contains(res.Error.Traceback, "<cell-") {
		t.Fatalf("an error in context a: want a ZeroDivisionError at line 2 with its traceback, got err %v, %s, error %+v", err, describeCell(res), res.Error)
	}

	// ResetContext empties the context it names, alone.
	ok(sandbox.Cell{Context: "a", ResetContext: true}, "")
	ok(in("a", "'x' in globals(), open('from_a.txt').read()"), "(False, 'written in a')")
	ok(in("b", "x"), "'b'")
	ok(in("", "x"), "'default'")
	ok(sandbox.Cell{Context: "b", ResetContext: true, Code: "'x' in globals()"}, "False")
	ok(sandbox.Cell{ResetContext: true, Code: "'x' in globals()"}, "False")

	// Contexts a and b exist: fill the session up to its limit.
	for i := 2; i < sandbox.MaxCellContexts; i++ {
		ok(in(fmt.Sprintf("c%d", i), fmt.Sprintf("n = %d\nn", i)), fmt.Sprint(i))
	}
	res, err = execCell(t, ses, in("one-too-many", "1"))
	if err != nil || res.Status != sandbox.StatusError || res.Error == nil || res.Error.Type != "ContextError" ||
		!strings.Contains(res.Error.Message, fmt.Sprintf("at most %d contexts", sandbox.MaxCellContexts)) {
		t.Fatalf("context %d+1: want a ContextError saying at most %d, got err %v, %s, error %+v",
			sandbox.MaxCellContexts, sandbox.MaxCellContexts, err, describeCell(res), res.Error)
	}
	ok(in("c2", "n"), "2")
	ok(in("", "1 + 1"), "2")
	ok(sandbox.Cell{Context: "c2", ResetContext: true}, "")
	ok(in("one-too-many", "'n' in globals()"), "False")

	// A bad name is the caller's error, naming the field.
	_, err = ses.Exec(context.Background(), in("a/b", "1"))
	var ie *sandbox.InputError
	if !errors.As(err, &ie) || ie.Field != "context" {
		t.Fatalf("context \"a/b\": want an input error naming context, got %v", err)
	}
	ok(in("b", "1"), "1")
}
