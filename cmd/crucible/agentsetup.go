package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/crucible-sandbox/crucible/agent"
	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

// agentSetup holds the flags the commands that run the code agent
// (agent, analyst) share: the model, the attempts, approval, and where
// the code runs and is recorded.
type agentSetup struct {
	llm        llm.Config
	maxRetries int
	approve    bool
	textMode   bool
	timeout    time.Duration
	memory     int64
	rootfs     string
	image      string
	store      string
	db         string
	config     string
	runtime    runtimeChoice
}

// addFlags adds the shared flags to fl; memory is --memory's default.
func (s *agentSetup) addFlags(fl *pflag.FlagSet, memory int64) {
	s.llm = llm.ConfigFromEnv()
	fl.StringVar(&s.llm.Provider, "provider", s.llm.Provider, "openai or anthropic")
	fl.StringVar(&s.llm.Model, "model", s.llm.Model, "model name (default $CRUCIBLE_MODEL)")
	fl.StringVar(&s.llm.BaseURL, "base-url", s.llm.BaseURL, "API base URL (default the provider's, or $OPENAI_BASE_URL)")
	fl.StringVar(&s.llm.APIKey, "api-key", s.llm.APIKey, "API key (default $OPENAI_API_KEY or $ANTHROPIC_API_KEY)")
	// Security: the key the environment gave is the flag's value, but
	// --help must not print it as the default (help text lands in
	// terminals, logs and screen shares).
	fl.Lookup("api-key").DefValue = ""
	fl.IntVar(&s.maxRetries, "max-retries", agent.DefaultMaxRetries, "failed attempts allowed after the first")
	fl.BoolVar(&s.approve, "approve", false, "show each program and ask before running it")
	fl.BoolVar(&s.textMode, "text-mode", false, "ask for fenced code instead of tool calls (models without tool calling)")
	durationVar(fl, &s.timeout, "timeout", agent.DefaultCellTimeout, "wall-time limit of each execution")
	sizeVar(fl, &s.memory, "memory", memory, "memory limit of the sandbox session")
	fl.StringVar(&s.rootfs, "rootfs", "", "root filesystem directory (default: the host's system directories)")
	fl.StringVar(&s.image, "image", "", "run in the built image `NAME` (list them with: crucible image ls), or \"host\" for the host's directories (default: datascience when built, else host)")
	fl.StringVar(&s.store, "store", image.DefaultStore, "image store directory")
	fl.StringVar(&s.db, "db", "", "run store for the executions' records: SQLite file path or postgres:// URL (default "+store.DefaultSQLitePath+")")
	fl.StringVar(&s.config, "config", "", "JSON file as for crucible serve; its \"redact\" settings apply")
	s.runtime.addFlags(fl)
}

// model checks the model flags and returns the provider; a bad flag is a
// usage error.
func (s *agentSetup) model() (llm.Provider, error) {
	if err := s.llm.Validate(); err != nil {
		return nil, usageError(err)
	}
	if s.maxRetries < 0 {
		return nil, usageError(fmt.Errorf("--max-retries %d: must not be negative", s.maxRetries))
	}
	model, err := llm.New(s.llm)
	if err != nil {
		return nil, usageError(err)
	}
	return model, nil
}

// retries is --max-retries as agent.Config takes it: zero means none
// here, not the default.
func (s *agentSetup) retries() int {
	if s.maxRetries == 0 {
		return agent.NoRetries
	}
	return s.maxRetries
}

// approver asks on the terminal before each program runs, reading the
// answers from in, when --approve is set; nil otherwise.
func (s *agentSetup) approver(in io.Reader) func(context.Context, string) (bool, error) {
	if !s.approve {
		return nil
	}
	return approveOn(in, os.Stderr)
}

// agentPlatform is where an agent's code runs: the runtime --runtime
// chooses, and the pipeline of the HTTP API in front of it, which redacts
// the output before a model sees it and records every execution in the
// run store.
type agentPlatform struct {
	rt  *imageRuntime
	st  store.Store
	svc *service.Service
}

// start starts the platform, its service running agents as agents says;
// who prefixes its message on d (the image chosen when --image is not
// given). The error is the command's exit.
func (s *agentSetup) start(ctx context.Context, d *display, who string, agents service.AgentConfig) (*agentPlatform, error) {
	if err := s.runtime.check(); err != nil {
		return nil, err
	}
	_, redactor, err := loadConfigAndRedactor(s.config, s.db, s.store)
	if err != nil {
		return nil, err
	}
	if s.image == "" && s.rootfs == "" && s.runtime.dockerImage == "" {
		s.image = image.ForModels(s.store)
		d.say("%s: the code runs in the image %s (--image chooses another; %s is the host's directories)", who, s.image, image.Host)
	}
	rt, err := s.runtime.start(ctx, s.rootfs, s.image, s.store, runtimeSettings{})
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, s.db)
	if err != nil {
		_ = rt.close()
		return nil, platformError(err)
	}
	imageName := s.image // what the records name: as crucible serve names it
	switch {
	case s.rootfs != "":
		imageName = rootfsImage
	case s.runtime.dockerImage != "":
		imageName = dockerImageName(s.runtime.dockerImage)
	}
	svc, err := service.New(service.Config{Runtime: rt.Runtime, ImageName: imageName, ImageDigest: rt.digest, Store: st, Redactor: redactor, Agents: agents,
		Hints: rt.hints, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		_ = st.Close()
		_ = rt.close()
		return nil, platformError(err)
	}
	return &agentPlatform{rt: rt, st: st, svc: svc}, nil
}

// close shuts the platform down.
func (p *agentPlatform) close() {
	p.svc.Shutdown(context.Background())
	_ = p.st.Close()
	_ = p.rt.close()
}
