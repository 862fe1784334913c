package analyst

import (
	"context"
	"fmt"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// RebuildError says which cell of a rebuild failed: the session's state
// was not rebuilt.
type RebuildError struct {
	// Cell numbers the cell that failed, from 1, of Cells.
	Cell, Cells int
	// Status is how it ended, Reason why (its exception, if it raised one).
	Status sandbox.Status
	Reason string
}

// Error says which cell failed, how and why.
func (e *RebuildError) Error() string {
	return fmt.Sprintf("replaying cell %d of %d ended %s: %s", e.Cell, e.Cells, e.Status, e.Reason)
}

// Rebuild brings the session of an analysis just opened (Open, on the
// same datasets) to the state of an earlier session of the same analysis,
// which is gone: it defines the analyst's helpers, as the first question
// did there, then runs cells, the programs that succeeded there, in the
// order they ran, and remembers answers as the conversation so far
// (oldest first; at most MaxConversation kept), so that the model is
// reminded of them. The cells are checked by the session's code policy
// as they were the first time.
//
// A cell that does not end ok stops the rebuild with a *RebuildError
// naming it; the session is then left as it is, holding part of the
// state: the caller closes it. An interpreter restart during a cell is
// such a failure. Any other error is the session's.
func (a *Analysis) Rebuild(ctx context.Context, cells []string, answers []*Answer) error {
	if err := a.lock(ctx); err != nil {
		return err
	}
	defer a.unlock()
	if err := a.loadHelpers(ctx); err != nil {
		return err
	}
	for i, code := range cells {
		res, err := a.Session.Exec(ctx, sandbox.Cell{Code: code})
		if err != nil {
			return err
		}
		if res.Status != sandbox.StatusOK || res.Restarted {
			reason := res.Reason
			if res.Error != nil {
				reason = fmt.Sprintf("%s: %s", res.Error.Type, res.Error.Message)
			}
			if res.Restarted {
				reason += " (the interpreter restarted)"
			}
			return &RebuildError{Cell: i + 1, Cells: len(cells), Status: res.Status, Reason: reason}
		}
	}
	for _, ans := range answers {
		a.remember(ans)
	}
	return nil
}
