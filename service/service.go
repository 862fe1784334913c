package service

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Service is the run pipeline every transport calls: the HTTP API, the
// command line, the agents, and the transports to come. It validates a
// request, admits it (server and tenant limits, the payload budget, the
// queue), answers it from the cache when asked to, runs it, redacts the
// result, records it, and counts it; it owns the sessions and who may use
// them. Transports only decode, call and encode. Create it with New.
type Service struct {
	cfg    Config
	images []Image // the default first
	// sessionImage indexes images: the image of the sessions and
	// analyses that name none (defaultSessionImage).
	sessionImage int
	log          *slog.Logger
	tenantRuns   runCounter
	feeds        feeds
	adm          *admission
	payload      *payloadBudget
	met          *metrics
	sessions     *registry[*Session]
	agents       *registry[*agentRun]
	analyses     *registry[*analysis]
	// analysesMu serializes loading analyses from the store into
	// analyses, and deleting them (analysisstore.go).
	analysesMu sync.Mutex
	// base is the context of every run; cancelling it kills the runs
	// still executing when Shutdown gives up waiting.
	base   context.Context
	cancel context.CancelFunc
}

// New returns a service for cfg. With a Store, it first settles the runs
// and agent runs a previous process left going on, marking them
// interrupted.
func New(cfg Config) (*Service, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	images, err := cfg.offeredImages()
	if err != nil {
		return nil, err
	}
	if cfg.Store != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		n, err := settleRuns(ctx, cfg)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("service: settle interrupted runs: %w", err)
		}
		if n > 0 {
			cfg.Logger.Info("marked runs left by a previous process as interrupted", "count", n)
		}
		n, err = settleAgentRuns(ctx, cfg.Store, ownRuns(cfg.Placement))
		cancel()
		if err != nil {
			return nil, fmt.Errorf("service: settle interrupted agent runs: %w", err)
		}
		if n > 0 {
			cfg.Logger.Info("marked agent runs left by a previous process as interrupted", "count", n)
		}
	}
	s := &Service{cfg: cfg, images: images, sessionImage: defaultSessionImage(images), log: cfg.Logger, payload: newPayloadBudget(cfg.MaxPayloadBytes, cfg.PayloadWait)}
	s.sessions = newSessionRegistry(cfg.MaxSessions)
	s.agents = newAgentRegistry(cfg.Agents)
	s.analyses = newAnalysisRegistry(cfg.Store != nil)
	s.met = newMetrics(s.sessions.active, cfg.Pools)
	s.adm = newAdmission(cfg.MaxConcurrent, cfg.MaxQueue, s.met.queueDepth)
	s.base, s.cancel = context.WithCancel(context.Background())
	if cfg.RunQueue != nil {
		s.pullers()
		go s.sweep()
	}
	go s.sweepOrphans()
	return s, nil
}

// settleRuns marks interrupted the runs a previous process left queued or
// running: all of them on a single server; in cluster mode, where nodes
// share the store, only this node's (the others' are theirs to run).
func settleRuns(ctx context.Context, cfg Config) (int, error) {
	if cfg.RunQueue != nil {
		return cfg.Store.MarkInterruptedOn(ctx, cfg.RunQueue.NodeID())
	}
	return cfg.Store.MarkInterrupted(ctx)
}

// Metrics returns the registry of the service's Prometheus metrics, all
// named crucible_*, for a transport to serve.
func (s *Service) Metrics() *prometheus.Registry { return s.met.reg }

// PayloadBudget is the most memory request bodies may hold at once
// (Config.MaxPayloadBytes).
func (s *Service) PayloadBudget() int64 { return s.cfg.MaxPayloadBytes }

// MaxBodyBytes is the largest request body tenant may send.
func (s *Service) MaxBodyBytes(tenant string) int64 { return s.LimitsFor(tenant).MaxRequestBytes }

// ReservePayload waits until a request body of n bytes fits in the
// payload budget (Config.MaxPayloadBytes), before a transport reads it.
// The reservation is released by the run the body becomes (pass it in
// RunOptions.Payload) or by Release. A body over the tenant's limit is
// refused (KindTooLarge) at once; a budget that stays full for
// Config.PayloadWait is KindBusy.
func (s *Service) ReservePayload(ctx context.Context, tenant string, n int64) (*Payload, error) {
	if limit := s.MaxBodyBytes(tenant); n > limit {
		return nil, &Error{Kind: KindTooLarge, Field: "body", Rule: fmt.Sprintf("must be at most %d bytes", limit),
			Message: fmt.Sprintf("the body exceeds the limit of %d bytes", limit)}
	}
	return s.payload.reserve(ctx, n)
}

// Shutdown stops admitting runs and waits for the admitted ones, queued or
// executing, to end. If ctx ends first, the runs still going are killed
// (their records end as "killed") and ctx's error is returned. Agent runs
// are not waited for: they are cancelled at once (status cancelled), an
// agent's work being open-ended. Then the sessions the service opened are
// closed.
func (s *Service) Shutdown(ctx context.Context) error {
	agentsDone := stopAgentRuns(s.agents, "cancelled: the server is shutting down")
	drained := s.adm.close()
	var err error
	for _, done := range []<-chan struct{}{agentsDone, drained} {
		select {
		case <-done:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	s.cancel()
	for _, ss := range s.sessions.liveItems() {
		_ = ss.Close()
	}
	return err
}
