package swe_test

import (
	"context"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	"github.com/crucible-sandbox/crucible/swe"
)

// TestBenchBadConfig checks what Bench refuses before any task runs.
func TestBenchBadConfig(t *testing.T) {
	model, err := llm.New(llm.Config{Provider: llm.ProviderOpenAI, Model: "m", APIKey: "k", BaseURL: "http://127.0.0.1:9/v1"})
	if err != nil {
		t.Fatal(err)
	}
	var rt *linux.Runtime // never used: every case fails first
	ok := swe.Config{Model: model, Sandbox: rt}
	for _, tc := range []struct {
		name  string
		cfg   swe.BenchConfig
		tasks []swe.BenchTask
		want  string
	}{
		{"negative concurrency", swe.BenchConfig{Config: ok, Concurrency: -1}, nil, "concurrency must be at least 1, got -1"},
		{"no model", swe.BenchConfig{Config: swe.Config{Sandbox: rt}}, nil, "Config.Model and Config.Sandbox are required"},
		{"no sandbox", swe.BenchConfig{Config: swe.Config{Model: model}}, nil, "Config.Model and Config.Sandbox are required"},
		{"a task twice", swe.BenchConfig{Config: ok}, []swe.BenchTask{{Name: "a"}, {Name: "b"}, {Name: "a"}}, `task "a" is listed twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := swe.Bench(context.Background(), tc.cfg, tc.tasks)
			if err == nil || !strings.Contains(err.Error(), tc.want) || rep != nil {
				t.Errorf("Bench = %v, %v; want the error %q", rep, err, tc.want)
			}
		})
	}
}
