package kernel

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// ApplyReply fills res from the reply of the cell it ran, as every
// runtime's sessions report one: the value and its HTML, the status
// ("blocked" and "error" as StatusBlocked and StatusError, with exit codes
// -1 and 1), the findings, the error, then the displays and the figures
// (PNG artifacts figure-1.png, ...), which take their content from budget
// bytes in the cell's order: what does not fit is listed without content.
// It returns the bytes of content taken. The caller then applies what the
// host decided itself (a limit that stopped the cell, the files).
//
// Security: the reply comes from the kernel's process, which the cell
// shares: nothing of it is trusted, only bounded (BoundFindings,
// ResultDisplays, the budget).
func ApplyReply(res *sandbox.Result, reply Reply, budget int64) (used int64) {
	res.Value, res.ValueHTML = reply.Value, reply.HTML
	res.Status, res.ExitCode = sandbox.StatusOK, 0
	res.Findings = sandbox.BoundFindings(reply.Findings)
	switch {
	case reply.Status == "blocked":
		res.Status, res.ExitCode = sandbox.StatusBlocked, -1
		res.Reason = "the code policy blocked the cell; nothing of it ran"
	case reply.Status != "ok":
		res.Status, res.ExitCode = sandbox.StatusError, 1
		if e := reply.Error; e != nil {
			res.Error = &sandbox.ExecError{Type: e.Type, Message: e.Message, Line: e.Line, Column: e.Column, Traceback: e.Traceback}
		}
	}
	// Displays come first, in the cell's order, and take their share of
	// the budget; figures the rest.
	res.Displays, used = ResultDisplays(reply.Displays, budget)
	for i, b64 := range reply.Figures {
		png, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			continue
		}
		sum := sha256.Sum256(png)
		a := sandbox.Artifact{Name: fmt.Sprintf("figure-%d.png", i+1), MIME: "image/png", Size: int64(len(png)), SHA256: hex.EncodeToString(sum[:])}
		if int64(len(png)) <= budget-used {
			a.Content, used = png, used+int64(len(png))
		} else {
			a.ContentOmitted = true
		}
		res.Artifacts = append(res.Artifacts, a)
	}
	return used
}
