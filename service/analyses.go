package service

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/crucible-sandbox/crucible/analyst"
	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/ids"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// AnalysisSpec is what an analysis is made of: its datasets, given whole
// (Datasets) or named among the files of one of the tenant's open
// sessions (SessionID and Files), and its session's image and limits.
type AnalysisSpec struct {
	Datasets  []analyst.Dataset
	SessionID string
	Files     []string
	Image     string
	Limits    sandbox.Limits
}

// analysis is a data analysis the service holds: the analyst's session
// and profile, and its questions.
type analysis struct {
	id, tenant  string
	an          *analyst.Analysis
	sess        *Session
	datasets    []string
	profile     json.RawMessage // redacted
	profileText string          // redacted
	created     time.Time

	mu        sync.Mutex
	questions []*question // the last analyst.MaxConversation
	asked     int         // questions asked so far
	asking    *question
}

// CreateAnalysis opens an analysis of tenant's datasets: a session of the
// image spec names (the session default for none, defaultSessionImage), counted against the tenant's
// open sessions, in which the datasets are loaded and profiled. Its
// profile is redacted. Datasets named in a session are read from it, at
// most the tenant's request-body limit all together, within the payload
// budget.
//
// The refusals: an input error naming the field for bad datasets (none,
// too many, a bad or repeated name, too large), a bad image or limit,
// KindUnsuitableImage for an image without pandas,
// both datasets and session files or neither, a bad session file name;
// KindNotFound or KindSessionClosed for the session, KindNotFound for a
// file it does not have, KindWithheld for one that holds a secret and is
// not text; KindBusy when the tenant's or the server's sessions are
// full. A dataset that cannot be read is no error: its profile says why.
// payload, the reservation of the request's body, is released once the
// session holds the datasets.
func (s *Service) CreateAnalysis(ctx context.Context, tenant string, spec AnalysisSpec, payload *Payload) (api.Analysis, error) {
	defer payload.Release()
	img, err := s.analysisImage(spec.Image) // before the datasets are read: nothing is done in vain
	if err != nil {
		return api.Analysis{}, err
	}
	datasets, release, err := s.analysisDatasets(ctx, tenant, spec)
	if err != nil {
		return api.Analysis{}, err
	}
	defer release()
	lim, err := s.analysisLimits(spec.Limits, datasets)
	if err != nil {
		return api.Analysis{}, err
	}
	an, err := analyst.Open(ctx, tenantSessions{s: s, tenant: tenant, agent: true}, sandbox.SessionRequest{Image: img.Name, Limits: lim}, datasets)
	if err != nil {
		return api.Analysis{}, err
	}
	sess, ok := an.Session.(*Session)
	if !ok {
		_ = an.Close()
		return api.Analysis{}, fmt.Errorf("service: the analysis session is a %T", an.Session)
	}
	a := &analysis{id: ids.New(ids.Analysis), tenant: tenant, an: an, sess: sess, created: time.Now().UTC()}
	for _, d := range datasets {
		a.datasets = append(a.datasets, d.Name)
	}
	if a.profile, a.profileText, err = s.redactedProfile(an.Profile); err != nil {
		_ = an.Close()
		return api.Analysis{}, fmt.Errorf("service: encode the profile: %w", err)
	}
	_ = s.analyses.add(a.tenant, a.id, a, math.MaxInt) // unbounded: its session was admitted
	go func() {                                        // the session ending (closed, expired) ends the analysis
		<-sess.Done()
		s.analyses.end(a.id)
	}()
	return a.describe(true), nil
}

// redactedProfile is p as JSON and as text, redacted.
func (s *Service) redactedProfile(p *analyst.Profile) (json.RawMessage, string, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, "", err
	}
	raw, err := redactJSON(s.cfg.Redactor, b)
	if err != nil {
		return nil, "", err
	}
	text, _ := s.cfg.Redactor.RedactString(p.Text())
	return raw, text, nil
}

// analysisLimits checks lim against the server's maxima and fills its
// zero fields as analyst.SessionLimits does, within the maxima.
func (s *Service) analysisLimits(lim sandbox.Limits, datasets []analyst.Dataset) (sandbox.Limits, error) {
	if err := lim.Within(s.cfg.Maxima); err != nil {
		return lim, err
	}
	return analyst.SessionLimits(lim, datasets, s.cfg.Maxima).DefaultsWithin(s.cfg.Maxima), nil
}

// describe describes a; with detail, its profile and its conversation.
func (a *analysis) describe(detail bool) api.Analysis {
	a.mu.Lock()
	defer a.mu.Unlock()
	info := api.Analysis{ID: a.id, SessionID: a.sess.ID(), Image: a.sess.img.Name, Datasets: a.datasets,
		Questions: a.asked, CreatedAt: a.created}
	if a.asking != nil {
		info.Asking = a.asking.n
	}
	if detail {
		info.Profile, info.ProfileText = a.profile, a.profileText
		for _, q := range a.questions {
			info.Conversation = append(info.Conversation, q.describe(false, false))
		}
	}
	return info
}

// Analysis describes tenant's analysis id: its profile and its
// conversation. KindNotFound when there is none (or it is another
// tenant's), KindSessionClosed once its session has ended.
func (s *Service) Analysis(tenant, id string) (api.Analysis, error) {
	a, err := s.analyses.get(tenant, id)
	if err != nil {
		return api.Analysis{}, err
	}
	return a.describe(true), nil
}

// Analyses lists tenant's analyses, newest first, without their profiles
// and conversations.
func (s *Service) Analyses(tenant string) []api.Analysis {
	list := s.analyses.list(tenant)
	infos := make([]api.Analysis, len(list))
	for i, a := range list {
		infos[i] = a.describe(false)
	}
	return infos
}

// DeleteAnalysis ends tenant's analysis id: a question being answered is
// cancelled, and its session closed.
func (s *Service) DeleteAnalysis(ctx context.Context, tenant, id string) error {
	a, err := s.analyses.get(tenant, id)
	if err != nil {
		return err
	}
	a.mu.Lock()
	q := a.asking
	a.mu.Unlock()
	if q != nil {
		q.run.stop("cancelled: the analysis was deleted")
	}
	err = a.sess.Close()
	s.analyses.end(a.id)
	return err
}

// newAnalysisRegistry returns the table of the service's analyses; it
// remembers the IDs of those that ended (a bounded number), to tell them
// from unknown ones. An analysis counts against its tenant's sessions,
// not against a share of its own.
func newAnalysisRegistry() *registry[*analysis] {
	return newRegistry[*analysis](registryConfig{remember: maxClosedIDs,
		notFound: func(id string) error {
			return &Error{Kind: KindNotFound, Field: "id", Rule: "must name an analysis of yours",
				Message: fmt.Sprintf("no analysis %q", id)}
		},
		closedErr: func(id string) error {
			return &Error{Kind: KindSessionClosed, Field: "id", Rule: "must name an analysis whose session is open",
				Message: fmt.Sprintf("analysis %q has ended: it was deleted, or its session was closed or expired", id)}
		}})
}
