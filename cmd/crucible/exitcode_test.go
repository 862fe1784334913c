package main

import (
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
