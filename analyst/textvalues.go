package analyst

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
)

// textValuesSource is the parser of dates and numbers written as text
// that the profiler (profile.py) and crucible_clean (helpers.py) share:
// one source, so that both agree on which values are dates or numbers.
//
//go:embed textvalues.py
var textValuesSource string

// textValuesModule is the module name the profiler and the helpers
// import textvalues.py by.
const textValuesModule = "crucible_textvalues"

// withTextValues returns body (Python statements indented by four spaces,
// for the inside of a function) preceded by the statements that make
// textvalues.py the module crucible_textvalues in sys.modules, so that the
// source body runs can import it, and followed by the one that removes it
// from there: the modules that imported it keep their reference, and the
// session's modules stay the user's.
func withTextValues(body string) (string, error) {
	src, err := json.Marshal(textValuesSource) // a JSON string is a Python string literal
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(`    import sys, types
    tv = types.ModuleType(%[1]q)
    exec(compile(%[2]s, %[1]q + ".py", "exec"), tv.__dict__)
    sys.modules[%[1]q] = tv
    try:
%[3]s
    finally:
        sys.modules.pop(%[1]q, None)
`, textValuesModule, src, indent(body)), nil
}

// indent indents each line of s by four spaces more.
func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}
