package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// readFileFlags reads --file NAME=PATH flags into input files, keeping
// each file's execute bit.
func readFileFlags(specs []string) ([]sandbox.File, error) {
	var files []sandbox.File
	for _, spec := range specs {
		n, p, ok := strings.Cut(spec, "=")
		if !ok || n == "" || p == "" {
			return nil, fmt.Errorf("--file %q: want NAME=PATH", spec)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("--file %s: %w", n, err)
		}
		st, _ := os.Stat(p)
		files = append(files, sandbox.File{Name: n, Content: b, Executable: st != nil && st.Mode()&0o111 != 0})
	}
	return files, nil
}

// localService is the pipeline a one-shot command (run, session) sends
// its code through, as the API does: validation, this host's maxima,
// admission, the errors' hints (errorHints). It keeps no record, and the
// output, shown to the person who ran the command, is not redacted. Its
// one tenant may ask for network: the person at the command asks for it
// by name (crucible run --allow).
func localService(rt *imageRuntime) (*service.Service, error) {
	noRedaction, err := policy.NewRedactor(policy.RedactConfig{})
	if err != nil {
		return nil, platformError(err)
	}
	allowNetwork := true
	svc, err := service.New(service.Config{Runtime: rt.Runtime, Redactor: noRedaction, Hints: rt.hints,
		TenantDefaults: service.TenantLimits{AllowNetwork: &allowNetwork},
		Logger:         slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return nil, platformError(err)
	}
	return svc, nil
}
