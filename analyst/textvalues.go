package analyst

import (
	_ "embed"
	"encoding/json"
	"fmt"
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

// moduleCode returns Python statements, indented for the body of a
// function, that run source as the module name, bound to m, with
// textvalues.py importable as crucible_textvalues while it runs: it is
// put in sys.modules first and taken out after, so that the modules that
// imported it keep their reference and the session's modules stay the
// user's.
func moduleCode(name, source string) (string, error) {
	tv, err := json.Marshal(textValuesSource) // a JSON string is a Python string literal
	if err != nil {
		return "", err
	}
	src, err := json.Marshal(source)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(`    import sys, types
    tv = types.ModuleType(%[1]q)
    exec(compile(%[2]s, %[1]q + ".py", "exec"), tv.__dict__)
    sys.modules[%[1]q] = tv
    try:
        m = types.ModuleType(%[3]q)
        exec(compile(%[4]s, %[3]q + ".py", "exec"), m.__dict__)
    finally:
        sys.modules.pop(%[1]q, None)`, textValuesModule, tv, name, src), nil
}
