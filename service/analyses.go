package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/crucible-sandbox/crucible/analyst"
	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/ids"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/store"
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
// and profile, and its questions. One loaded from the store (its session
// gone) has none until its next question rebuilds it (analysisrebuild.go).
type analysis struct {
	id, tenant  string
	image       string
	limits      sandbox.Limits
	datasets    []string
	profile     json.RawMessage // redacted
	profileText string          // redacted
	created     time.Time

	mu           sync.Mutex
	an           *analyst.Analysis // nil until the session is rebuilt
	sess         *Session          // an's
	deleted      bool              // DeleteAnalysis was called
	rebuilt      *time.Time
	rebuiltCells int
	// The cells the store holds for a rebuild (store.Analysis), and those
	// that ran since and are not stored yet (pending; pendingReset: the
	// interpreter restarted, what the stored ones built is gone).
	cells        int
	cellBytes    int64
	replayable   bool
	pending      []string
	pendingReset bool
	storeMu      sync.Mutex  // held by each write of its cells, in their order
	questions    []*question // the last analyst.MaxConversation
	asked        int         // questions asked so far
	asking       *question
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
	a := &analysis{id: ids.New(ids.Analysis), tenant: tenant, image: img.Name, limits: lim, an: an, sess: sess,
		created: time.Now().UTC(), replayable: true}
	for _, d := range datasets {
		a.datasets = append(a.datasets, d.Name)
	}
	if a.profile, a.profileText, err = s.redactedProfile(an.Profile); err != nil {
		_ = an.Close()
		return api.Analysis{}, fmt.Errorf("service: encode the profile: %w", err)
	}
	if err := s.storeAnalysis(ctx, a, datasets); err != nil {
		_ = an.Close()
		return api.Analysis{}, err
	}
	if err := s.recordHeld(ctx, a.id, tenant); err != nil { // before it is offered: the next request may come through any node
		_ = an.Close()
		if s.cfg.Store != nil {
			_ = s.cfg.Store.DeleteAnalysis(context.WithoutCancel(ctx), tenant, a.id)
		}
		return api.Analysis{}, err
	}
	_ = s.analyses.add(a.tenant, a.id, a, math.MaxInt) // unbounded: its session was admitted
	s.watchSession(a, sess)
	return a.describe(true), nil
}

// watchSession ends a in the registry when sess ends (closed, expired):
// the analysis stays in the store, and its next question rebuilds a
// session. With a store, the cells that run in sess are kept for that
// (observeSession).
func (s *Service) watchSession(a *analysis, sess *Session) {
	s.observeSession(a, sess)
	go func() {
		<-sess.Done()
		s.analyses.end(a.id)
	}()
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
	info := api.Analysis{ID: a.id, Image: a.image, Datasets: a.datasets, Questions: a.asked, CreatedAt: a.created,
		RebuiltAt: a.rebuilt, RebuiltCells: a.rebuiltCells}
	if a.sess != nil {
		info.SessionID = a.sess.ID()
	}
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
// conversation, from the store when the service no longer holds it.
// KindNotFound when there is none (or it is another tenant's);
// KindSessionClosed once its session has ended, without a store.
func (s *Service) Analysis(ctx context.Context, tenant, id string) (api.Analysis, error) {
	a, err := s.heldAnalysis(ctx, tenant, id, false)
	if err != nil {
		return api.Analysis{}, err
	}
	return a.describe(true), nil
}

// Analyses lists tenant's analyses, newest first, without their profiles
// and conversations: with a store, a page of at most limit (the store's
// default for 0) after cursor, and the cursor of the next page; without,
// those the service holds, all at once.
func (s *Service) Analyses(ctx context.Context, tenant string, limit int, cursor string) ([]api.Analysis, string, error) {
	if s.cfg.Store == nil {
		list := s.analyses.list(tenant)
		infos := make([]api.Analysis, len(list))
		for i, a := range list {
			infos[i] = a.describe(false)
		}
		return infos, "", nil
	}
	return s.storedAnalyses(ctx, tenant, limit, cursor)
}

// DeleteAnalysis deletes tenant's analysis id: a question being answered
// is cancelled, its session closed, and it is deleted from the store
// with all it holds.
func (s *Service) DeleteAnalysis(ctx context.Context, tenant, id string) error {
	s.analysesMu.Lock() // no reopening meanwhile (heldAnalysis)
	a, err := s.analyses.get(tenant, id)
	var sess *Session
	if err == nil {
		a.mu.Lock()
		a.deleted = true
		q := a.asking
		sess = a.sess
		a.mu.Unlock()
		if q != nil {
			q.run.stop("cancelled: the analysis was deleted")
		}
		s.analyses.end(a.id)
	}
	if s.cfg.Store != nil {
		switch serr := s.cfg.Store.DeleteAnalysis(ctx, tenant, id); {
		case serr == nil:
			err = nil
		case !errors.Is(serr, store.ErrNotFound):
			s.analysesMu.Unlock()
			return fmt.Errorf("service: delete analysis %s: %w", id, serr)
		}
	}
	s.analysesMu.Unlock()
	if err != nil {
		return err
	}
	s.forgetHeld(id)
	if sess != nil {
		return sess.Close()
	}
	return nil
}

// newAnalysisRegistry returns the table of the analyses the service
// holds (with a store, stored, those whose session is open or being
// rebuilt); it remembers the IDs of those that ended (a bounded number),
// to tell them from unknown ones. An analysis counts against its tenant's
// sessions, not against a share of its own.
func newAnalysisRegistry(stored bool) *registry[*analysis] {
	rule, ended := "must name an analysis whose session is open", "it was deleted, or its session was closed or expired"
	if stored { // one whose session ended is read from the store: only a deleted one is not
		rule, ended = "must name an analysis that was not deleted", "it was deleted"
	}
	return newRegistry[*analysis](registryConfig{remember: maxClosedIDs,
		notFound: func(id string) error {
			return &Error{Kind: KindNotFound, Field: "id", Rule: "must name an analysis of yours",
				Message: fmt.Sprintf("no analysis %q", id)}
		},
		closedErr: func(id string) error {
			return &Error{Kind: KindSessionClosed, Field: "id", Rule: rule,
				Message: fmt.Sprintf("analysis %q has ended: %s", id, ended)}
		}})
}
