package mcpserver

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// RunOutput is a run's result as a tool returns it.
type RunOutput struct {
	ID              string             `json:"id" jsonschema:"the run's record; read it again with run_get"`
	Status          string             `json:"status" jsonschema:"how the run ended: ok, error (the program failed), timeout, cpu_limit, memory_limit, output_limit, killed, blocked (the code policy refused the code: nothing ran, see findings) or internal"`
	Reason          string             `json:"reason,omitempty" jsonschema:"a sentence explaining a status other than ok or error"`
	ExitCode        int                `json:"exit_code" jsonschema:"the program's exit code, -1 when killed by a signal or never started"`
	Stdout          string             `json:"stdout" jsonschema:"standard output (invalid UTF-8 replaced)"`
	Stderr          string             `json:"stderr" jsonschema:"standard error (invalid UTF-8 replaced)"`
	StdoutTruncated bool               `json:"stdout_truncated,omitempty" jsonschema:"stdout was cut at the output limit"`
	StderrTruncated bool               `json:"stderr_truncated,omitempty" jsonschema:"stderr was cut at the output limit"`
	Error           *sandbox.ExecError `json:"error,omitempty" jsonschema:"the uncaught exception or syntax error of a Python or JavaScript program, or a bash program's refused fork (type fork), with a hint when the platform knows one"`
	Value           string             `json:"value,omitempty" jsonschema:"in a session, the repr of the cell's last expression"`
	Artifacts       []ArtifactOutput   `json:"artifacts,omitempty" jsonschema:"files the run created or changed in the working directory"`
	Image           string             `json:"image,omitempty" jsonschema:"the image the code ran in"`
	Findings        []sandbox.Finding  `json:"findings,omitempty" jsonschema:"what the static code policy found: why the code was blocked, or what code that ran does that the policy forbids (rule, line, column, snippet, message)"`
}

// ArtifactOutput describes a file a run produced; its bytes are a resource.
type ArtifactOutput struct {
	Name string `json:"name" jsonschema:"path relative to the working directory"`
	MIME string `json:"mime" jsonschema:"media type, such as image/png"`
	Size int64  `json:"size" jsonschema:"size in bytes"`
	URI  string `json:"uri,omitempty" jsonschema:"resource URI to read the file's bytes as the run left them"`
}

// artifactURI is the resource URI of run id's artifact name.
func artifactURI(id, name string) string {
	return "crucible://runs/" + url.PathEscape(id) + "/artifacts/" + escapePath(name)
}

// escapePath escapes each segment of a slash-separated path.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// text returns b as valid UTF-8.
func text(b []byte) string { return strings.ToValidUTF8(string(b), "\uFFFD") }

// runOutput converts a run's response.
func runOutput(r api.RunResponse) RunOutput {
	out := RunOutput{ID: r.ID, Status: string(r.Status), Reason: r.Reason, ExitCode: r.ExitCode,
		Stdout: text(r.Stdout), Stderr: text(r.Stderr), StdoutTruncated: r.StdoutTruncated,
		StderrTruncated: r.StderrTruncated, Error: r.Error, Value: r.Value, Image: r.Image, Findings: r.Findings}
	for _, a := range r.Artifacts {
		o := ArtifactOutput{Name: a.Name, MIME: a.MIME, Size: a.Size}
		if r.ID != "" {
			o.URI = artifactURI(r.ID, a.Name)
		}
		out.Artifacts = append(out.Artifacts, o)
	}
	return out
}

// programFailed reports whether a run that ended with status s failed:
// any status but ok (a non-zero exit, a limit reached, a kill, a policy
// block, a platform failure). The tools that run code set the result's
// isError then, as MCP asks of a tool whose work failed, so that a client
// and its model see the failure without reading the status; the result
// still carries the whole run.
func programFailed(s sandbox.Status) bool { return s != sandbox.StatusOK }

// content is what a model reads of a run: a text summary (a cell's
// displays by their text), PNG displays and artifacts as images and the
// other artifacts as links to their resources.
func content(r api.RunResponse) []mcp.Content {
	var b strings.Builder
	fmt.Fprintf(&b, "status: %s", r.Status)
	if r.Reason != "" {
		fmt.Fprintf(&b, " (%s)", r.Reason)
	}
	fmt.Fprintf(&b, "\nexit_code: %d\n", r.ExitCode)
	if r.ID != "" {
		fmt.Fprintf(&b, "run: %s\n", r.ID)
	}
	section(&b, "stdout", r.Stdout, r.StdoutTruncated)
	section(&b, "stderr", r.Stderr, r.StderrTruncated)
	for _, d := range r.Displays {
		// A model reads a display by its text (a DataFrame's is its
		// table as text); a PNG also comes as an image below.
		fmt.Fprintf(&b, "display (%s):\n%s\n", d.MIME, d.Text)
	}
	if r.Value != "" {
		fmt.Fprintf(&b, "value: %s\n", r.Value)
	}
	if e := r.Error; e != nil {
		fmt.Fprintf(&b, "error: %s: %s", e.Type, e.Message)
		if e.Line > 0 {
			fmt.Fprintf(&b, " (line %d)", e.Line)
		}
		b.WriteString("\n")
		if e.Hint != "" {
			fmt.Fprintf(&b, "hint: %s\n", e.Hint)
		}
	}
	for _, a := range r.Artifacts {
		fmt.Fprintf(&b, "artifact: %s (%s, %d bytes)\n", a.Name, a.MIME, a.Size)
	}
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "code policy: %s\n", f)
	}
	cs := []mcp.Content{&mcp.TextContent{Text: b.String()}}
	for _, d := range r.Displays {
		if d.MIME == "image/png" && len(d.Data) > 0 {
			cs = append(cs, &mcp.ImageContent{MIMEType: d.MIME, Data: d.Data})
		}
	}
	for _, a := range r.Artifacts {
		if a.MIME == "image/png" && !a.ContentOmitted && len(a.Content) > 0 {
			cs = append(cs, &mcp.ImageContent{MIMEType: a.MIME, Data: a.Content})
			continue
		}
		if r.ID == "" { // no record to read it from
			continue
		}
		size := a.Size
		cs = append(cs, &mcp.ResourceLink{URI: artifactURI(r.ID, a.Name), Name: a.Name, MIMEType: a.MIME, Size: &size})
	}
	return cs
}

// section writes a labelled stream, if not empty.
func section(b *strings.Builder, name string, data []byte, truncated bool) {
	if len(data) == 0 {
		return
	}
	fmt.Fprintf(b, "%s:\n%s", name, text(data))
	if !strings.HasSuffix(string(data), "\n") {
		b.WriteString("\n")
	}
	if truncated {
		fmt.Fprintf(b, "[%s truncated at the output limit]\n", name)
	}
}

// recordResponse is a run record as a run's response; artifacts carry no
// bytes (they are resources).
func recordResponse(rec *api.Run) api.RunResponse {
	var as []sandbox.Artifact
	for _, m := range rec.Artifacts {
		as = append(as, m.Artifact())
	}
	return api.RunResponse{ID: rec.ID, Image: rec.Image, Result: sandbox.Result{
		Status: rec.Status, Reason: rec.Reason, ExitCode: rec.ExitCode, Signal: rec.Signal,
		Stdout: rec.Stdout, Stderr: rec.Stderr, StdoutTruncated: rec.StdoutTruncated,
		StderrTruncated: rec.StderrTruncated, Error: rec.Error, Artifacts: as, Language: rec.Language,
		Policy: rec.Policy, Findings: rec.Findings}}
}
