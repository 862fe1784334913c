package server

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"

	"github.com/go-json-experiment/json"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/service"
)

// maxFormField bounds a form field of an upload (image, limits).
const maxFormField = 64 << 10

// formType is the media type of an upload. A browser page may send one
// cross-site without a preflight: Handler's cross-origin check is what
// refuses it (browser.go).
const formType = "multipart/form-data"

// isMultipart reports whether r's body is multipart/form-data.
func isMultipart(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == formType
}

// readAnalysisForm reads r's multipart/form-data body as an analysis's
// spec: each part with a file name is a dataset called by it, the parts
// "image" and "limits" (JSON) are its fields. The body is read part by
// part under readBody's bounds (size, time, payload budget): nothing but
// the datasets is held, and no more than the body limit. The refusals
// name the part: datasets[i] for the i-th file, or the field's name.
func (s *Server) readAnalysisForm(w http.ResponseWriter, r *http.Request, tenant string) (service.AnalysisSpec, *service.Payload, *api.Error) {
	var spec service.AnalysisSpec
	_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if params["boundary"] == "" {
		return spec, nil, invalid("Content-Type", "must give the boundary of multipart/form-data")
	}
	payload, apiErr := s.readBody(w, r, tenant, func(body io.Reader) *api.Error {
		mr := multipart.NewReader(body, params["boundary"])
		seen := map[string]bool{}
		for parts := 0; ; parts++ {
			p, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return s.formError(err)
			}
			if parts >= service.MaxDatasets+2 {
				return invalid("body", fmt.Sprintf("must have at most %d parts: %d datasets and the fields image and limits", service.MaxDatasets+2, service.MaxDatasets))
			}
			if apiErr := s.readPart(p, &spec, seen); apiErr != nil {
				return apiErr
			}
		}
		if len(spec.Datasets) == 0 {
			return invalid("datasets", "must hold at least one file: a part with a filename in its Content-Disposition")
		}
		return nil
	})
	return spec, payload, apiErr
}

// readPart reads one part of an upload into spec.
func (s *Server) readPart(p *multipart.Part, spec *service.AnalysisSpec, seen map[string]bool) *api.Error {
	defer p.Close()
	if name := p.FileName(); name != "" {
		field := fmt.Sprintf("datasets[%d]", len(spec.Datasets))
		b, err := io.ReadAll(io.LimitReader(p, service.MaxDatasetBytes+1))
		if err != nil {
			return s.formError(err)
		}
		if len(b) > service.MaxDatasetBytes {
			return invalid(field, fmt.Sprintf("must be at most %d bytes", service.MaxDatasetBytes))
		}
		spec.Datasets = append(spec.Datasets, service.Dataset{Name: name, Content: b})
		return nil
	}
	field := p.FormName()
	switch field {
	case "image", "limits":
	default:
		if len(field) > 64 {
			field = field[:64] + "..."
		}
		return invalid(field, "is not a field here: a part is a dataset (with a filename), image or limits")
	}
	if seen[field] {
		return invalid(field, "appears more than once; give it once")
	}
	seen[field] = true
	b, err := io.ReadAll(io.LimitReader(p, maxFormField+1))
	if err != nil {
		return s.formError(err)
	}
	if len(b) > maxFormField {
		return invalid(field, fmt.Sprintf("must be at most %d bytes", maxFormField))
	}
	if field == "image" {
		spec.Image = string(b)
		return nil
	}
	if err := json.Unmarshal(b, &spec.Limits, json.RejectUnknownMembers(true)); err != nil {
		e := s.bodyError(err)
		if e.Field == "body" {
			e = invalid("limits", e.Rule)
		} else {
			e = invalid("limits."+e.Field, e.Rule)
		}
		return e
	}
	return nil
}

// formError is the answer to an error reading a multipart body: over
// the size or time bound as for any body, otherwise a malformed body.
func (s *Server) formError(err error) *api.Error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) || errors.Is(err, os.ErrDeadlineExceeded) {
		return s.bodyError(err)
	}
	return invalid("body", "must be multipart/form-data: "+err.Error())
}
