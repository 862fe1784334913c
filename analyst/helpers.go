package analyst

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"

	"github.com/crucible-sandbox/crucible/sandbox"
)

//go:embed helpers.py
var helpersSource string

// recordsDir is the directory of the working directory where the
// session's helpers write their records for the host (helpers.py): files
// under it are the analyst's, never the user's.
const recordsDir = ".crucible/"

// The kinds of record the helpers write, as recordsDir/<kind>/<n>.json.
const (
	recordTable    = "tables"
	recordCleaning = "cleaning"
)

// helpersCell is the cell that defines the helpers in the session:
// helpers.py runs as a module of its own (crucible_analyst, bound to
// _crucible_analyst; with textvalues.py to import: moduleCode), told
// the frames and how their files were read, and its show_table and
// crucible_clean are bound in the session's namespace.
func (a *Analysis) helpersCell() (string, error) {
	type frame struct {
		Frame
		Format  string            `json:"format,omitempty"`
		Reading map[string]string `json:"reading,omitempty"`
	}
	cfg := struct {
		Frames []frame `json:"frames"`
	}{}
	for i, f := range a.Frames {
		fr := frame{Frame: f}
		if a.Profile != nil && i < len(a.Profile.Tables) {
			fr.Format, fr.Reading = a.Profile.Tables[i].Format, a.Profile.Tables[i].Reading
		}
		cfg.Frames = append(cfg.Frames, fr)
	}
	config, err := json.Marshal(cfg)
	if err != nil {
		return "", err
	}
	body, err := moduleCode("crucible_analyst", helpersSource)
	if err != nil {
		return "", err
	}
	quoted, err := json.Marshal(string(config)) // a JSON string is a Python string literal
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(`def _crucible_helpers():
%s
    import json
    m.setup(json.loads(%s))
    g = globals()
    g["_crucible_analyst"], g["show_table"], g["crucible_clean"] = m, m.show_table, m.crucible_clean
_crucible_helpers()
del _crucible_helpers
`, body, quoted), nil
}

// valueTableCell records the last cell's value as a table, if it is a
// DataFrame. It ends in a statement, so that it leaves _ as it was.
const valueTableCell = "_crucible_analyst.value_table(globals().get('_'))\npass\n"

// loadHelpers defines the helpers in the session, once.
func (a *Analysis) loadHelpers(ctx context.Context) error {
	if a.helpersLoaded {
		return nil
	}
	code, err := a.helpersCell()
	if err != nil {
		return &sandbox.PlatformError{Op: "build the helpers cell", Err: err}
	}
	res, err := a.Session.Exec(ctx, sandbox.Cell{Code: code, Unchecked: true})
	if err != nil {
		return err
	}
	if res.Status != sandbox.StatusOK {
		return &sandbox.PlatformError{Op: "define the analyst's helpers", Err: fmt.Errorf("the cell ended %s: %s%s", res.Status, res.Reason, errorText(res))}
	}
	a.helpersLoaded = true
	return nil
}
