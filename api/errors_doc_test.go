package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// errorCodes returns the values of the Code constants declared in
// errors.go, in their order there: read from the source, so that a code
// added there is found without being listed anywhere else.
func errorCodes(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Code") || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s is not a string literal", name.Name)
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				codes = append(codes, v)
			}
		}
	}
	if len(codes) == 0 {
		t.Fatal("no Code constants in errors.go")
	}
	return codes
}

// docRowRE matches a row of the table of docs/errors.md: the code, the
// HTTP status and its text, the meaning.
var docRowRE = regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| ([0-9]{3}) ([^|]+?) \\| ([^|]*) \\|")

// TestErrorsDoc keeps docs/errors.md, the page users read for the API's
// errors, equal to the codes of this package: every code has a row with
// the status HTTPStatus answers it with (and its text) and a meaning, and
// no row names a code that does not exist. Every code but internal also
// has a status of its own: a code HTTPStatus forgot would be a 500.
func TestErrorsDoc(t *testing.T) {
	codes := errorCodes(t)
	doc, err := os.ReadFile("../docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, m := range docRowRE.FindAllStringSubmatch(string(doc), -1) {
		if _, dup := rows[m[1]]; dup {
			t.Errorf("docs/errors.md: two rows for %q", m[1])
		}
		rows[m[1]] = m[2:]
	}
	for _, code := range codes {
		status := HTTPStatus(code)
		if status == http.StatusInternalServerError && code != CodeInternal {
			t.Errorf("HTTPStatus(%q) = 500: give the code its status", code)
		}
		row, ok := rows[code]
		if !ok {
			t.Errorf("docs/errors.md has no row for the code %q (HTTP %d): add \"| `%s` | %d %s | meaning | what to do |\"", code, status, code, status, http.StatusText(status))
			continue
		}
		if want := []string{strconv.Itoa(status), http.StatusText(status)}; !slices.Equal(row[:2], want) {
			t.Errorf("docs/errors.md: %q is %s %s, want %s %s", code, row[0], row[1], want[0], want[1])
		}
		if len(strings.TrimSpace(row[2])) < 20 {
			t.Errorf("docs/errors.md: %q has no meaning: %q", code, row[2])
		}
		delete(rows, code)
	}
	for code := range rows {
		t.Errorf("docs/errors.md has a row for %q, which is not a code of api/errors.go", code)
	}
}
