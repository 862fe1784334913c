package service

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/crucible-sandbox/crucible/analyst"
	"github.com/crucible-sandbox/crucible/internal/nearest"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// analysisDatasets returns the datasets of spec: its own, or the files
// of the session it names, read within the tenant's request-body limit
// (all together) and a reservation of the payload budget, which release
// gives back.
func (s *Service) analysisDatasets(ctx context.Context, tenant string, spec AnalysisSpec) (datasets []analyst.Dataset, release func(), err error) {
	none := func() {}
	switch {
	case spec.SessionID == "" && len(spec.Files) > 0:
		return nil, none, invalid("session_id", "must name the session that holds files")
	case spec.SessionID == "":
		return spec.Datasets, none, nil
	case len(spec.Datasets) > 0:
		return nil, none, invalid("datasets", "must be left out when session_id names the files to analyse: give one or the other")
	case len(spec.Files) == 0:
		return nil, none, invalid("files", "must name at least one file of session %s", spec.SessionID)
	case len(spec.Files) > analyst.MaxDatasets:
		return nil, none, invalid("files", "must name at most %d files, got %d", analyst.MaxDatasets, len(spec.Files))
	}
	for i, name := range spec.Files {
		if rule := sandbox.CheckFileName(name); rule != "" {
			return nil, none, invalid(fmt.Sprintf("files[%d]", i), "%s, got %q", rule, name)
		}
	}
	ss, err := s.Session(tenant, spec.SessionID)
	if err != nil {
		return nil, none, err
	}
	sizes, err := fileSizes(ctx, ss, spec.Files)
	if err != nil {
		return nil, none, err
	}
	var total int64
	for _, n := range sizes {
		total += n
	}
	if limit := s.MaxBodyBytes(tenant); total > limit {
		return nil, none, invalid("files", "must hold at most %d bytes together (the request-body limit), got %d", limit, total)
	}
	p, err := s.ReservePayload(ctx, tenant, total)
	if err != nil {
		return nil, none, err
	}
	for i, name := range spec.Files {
		b, err := ss.ReadFile(ctx, name)
		if err != nil {
			p.Release()
			return nil, none, fieldOfError(err, fmt.Sprintf("files[%d]", i))
		}
		if int64(len(b)) > sizes[i] { // it grew since it was listed
			p.Release()
			return nil, none, invalid(fmt.Sprintf("files[%d]", i), "must not change while it is read: %q grew from %d bytes to %d", name, sizes[i], len(b))
		}
		datasets = append(datasets, analyst.Dataset{Name: path.Base(name), Content: b})
	}
	return datasets, p.Release, nil
}

// fileSizes returns the size of each of the files of ss named, which must
// be regular files: KindNotFound names the first that is missing, and the
// session's files nearest its name (a misspelt dataset).
func fileSizes(ctx context.Context, ss *Session, names []string) ([]int64, error) {
	files, err := ss.ListFiles(ctx)
	if err != nil {
		return nil, err
	}
	var regular []string
	for _, f := range files {
		if !f.Dir {
			regular = append(regular, f.Name)
		}
	}
	sizes := make([]int64, len(names))
	for i, name := range names {
		found := false
		for _, f := range files {
			if f.Name == name && !f.Dir {
				sizes[i], found = f.Size, true
				break
			}
		}
		if !found {
			near := nearest.Suggest(nearest.Names(name, regular, maxSuggested))
			return nil, &Error{Kind: KindNotFound, Field: fmt.Sprintf("files[%d]", i), Rule: "must name a file of the session" + near,
				Message: fmt.Sprintf("session %s has no file %q%s", ss.ID(), name, near)}
		}
	}
	return sizes, nil
}

// maxSuggested is how many near names an error suggests.
const maxSuggested = 3

// fieldOfError names field in err, a refusal of the session about a file.
func fieldOfError(err error, field string) error {
	var se *Error
	if errors.As(err, &se) {
		c := *se
		c.Field = field
		return &c
	}
	var ie *sandbox.InputError
	if errors.As(err, &ie) {
		return &sandbox.InputError{Field: field, Rule: ie.Rule}
	}
	return err
}
