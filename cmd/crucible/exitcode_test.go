package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

func TestExitCodeFor(t *testing.T) {
	tests := []struct {
		res  sandbox.Result
		want int
	}{
		{sandbox.Result{Status: sandbox.StatusOK}, 0},
		{sandbox.Result{Status: sandbox.StatusError, ExitCode: 3}, 3},
		{sandbox.Result{Status: sandbox.StatusError, ExitCode: -1, Signal: "SIGXFSZ"}, 128 + 25},
		{sandbox.Result{Status: sandbox.StatusKilled, ExitCode: -1, Signal: "SIGSEGV"}, 128 + 11},
		{sandbox.Result{Status: sandbox.StatusTimeout, ExitCode: -1, Signal: "SIGKILL"}, exitTimeout},
		{sandbox.Result{Status: sandbox.StatusCPULimit}, exitCPULimit},
		{sandbox.Result{Status: sandbox.StatusMemoryLimit}, exitMemoryLimit},
		{sandbox.Result{Status: sandbox.StatusOutputLimit}, exitOutputLimit},
		{sandbox.Result{Status: sandbox.StatusBlocked}, exitBlocked},
		{sandbox.Result{Status: sandbox.StatusInternal}, exitInternal},
	}
	for _, tt := range tests {
		if got := exitCodeFor(tt.res); got != tt.want {
			t.Errorf("%s/%s: got %d, want %d", tt.res.Status, tt.res.Signal, got, tt.want)
		}
	}
}

func TestServerHostPaths(t *testing.T) {
	got := serverHostPaths("sqlite:/data/crucible/runs.db", "/var/lib/crucible/images")
	for _, want := range []string{"/data/crucible", "/var/lib/crucible/images"} {
		if !slices.Contains(got, want) {
			t.Errorf("serverHostPaths = %v, want it to hold %s", got, want)
		}
	}
	for _, p := range got {
		if p == "/" || strings.HasPrefix(p, "/work") || strings.HasPrefix(p, "/tmp") {
			t.Errorf("serverHostPaths = %v must not hold / or a sandbox path (%s)", got, p)
		}
	}
	if pg := serverHostPaths("postgres://u:p@db/x", "/s"); slices.ContainsFunc(pg, func(p string) bool { return strings.Contains(p, "postgres") }) {
		t.Errorf("a Postgres URL is not a path: %v", pg)
	}
}
