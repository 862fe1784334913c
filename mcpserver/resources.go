package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crucible-sandbox/crucible/service"
)

// runsPrefix begins the URI of every run resource.
const runsPrefix = "crucible://runs/"

// addResources adds the run records and their artifacts as resource
// templates: crucible://runs/{id} and crucible://runs/{id}/artifacts/{name}.
func (h *handlers) addResources(s *mcp.Server) {
	s.AddResourceTemplate(&mcp.ResourceTemplate{Name: "run", Title: "A run's record", URITemplate: runsPrefix + "{id}",
		MIMEType: "application/json", Description: "The record of a past run as JSON: its code, status, output, error and artifacts."}, h.readRun)
	s.AddResourceTemplate(&mcp.ResourceTemplate{Name: "artifact", Title: "A file a run produced", URITemplate: runsPrefix + "{id}/artifacts/{+name}",
		Description: "The bytes of a file a run wrote in its working directory, as run_code's resource links name it."}, h.readRun)
}

// readRun reads a run's record or one of its artifacts.
func (h *handlers) readRun(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	rest, ok := strings.CutPrefix(uri, runsPrefix)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	idPart, namePart, isArtifact := strings.Cut(rest, "/artifacts/")
	id, err1 := url.PathUnescape(idPart)
	name, err2 := url.PathUnescape(namePart)
	if err1 != nil || err2 != nil || id == "" || strings.Contains(idPart, "/") || (isArtifact && name == "") {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if !isArtifact {
		rec, err := h.svc.Get(ctx, h.tenant, id)
		if err != nil {
			return nil, notFound(uri, err)
		}
		b, err := json.Marshal(rec)
		if err != nil {
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
	}
	meta, content, err := h.svc.Artifact(ctx, h.tenant, id, name)
	if err != nil {
		return nil, notFound(uri, err)
	}
	rc := &mcp.ResourceContents{URI: uri, MIMEType: meta.MIME}
	if strings.HasPrefix(meta.MIME, "text/") && utf8.Valid(content) {
		rc.Text = string(content)
	} else {
		rc.Blob = content
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{rc}}, nil
}

// notFound turns the service's "no such run or artifact" into the
// protocol's resource-not-found error; other errors pass.
func notFound(uri string, err error) error {
	var e *service.Error
	if errors.As(err, &e) && e.Kind == service.KindNotFound {
		return mcp.ResourceNotFoundError(uri)
	}
	return err
}
