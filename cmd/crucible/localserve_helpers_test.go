package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startLocalServe starts `crucible serve` with args, its local socket and
// database in a temporary directory, waits until it listens on the socket,
// and returns the socket's path and the API's base URL; the server is
// stopped (SIGTERM) when tb ends. bin is the crucible binary; "" is this
// test binary (TestMain).
func startLocalServe(tb testing.TB, bin string, args ...string) (sock, base string) {
	tb.Helper()
	sock, base, _ = startLocalServeWith(tb, bin, nil, args...)
	return sock, base
}

// startLocalServeWith is startLocalServe with extra files for the server
// (exec.Cmd's ExtraFiles: entry i is its fd 3+i); it returns the
// server's pid as well.
func startLocalServeWith(tb testing.TB, bin string, extra []*os.File, args ...string) (sock, base string, pid int) {
	tb.Helper()
	dir := tb.TempDir()
	sock = filepath.Join(dir, "serve.sock")
	args = append([]string{"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "runs.db"), "--socket", sock}, args...)
	var cmd *exec.Cmd
	if bin == "" {
		cmd = crucibleCommand(args...)
	} else {
		cmd = exec.Command(bin, args...)
	}
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.ExtraFiles = extra
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tb.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-exited
		if tb.Failed() {
			tb.Logf("crucible serve's log:\n%s", logs.String())
		}
	})
	for !strings.Contains(logs.String(), "serving crucible run on the local socket") {
		select {
		case err := <-exited:
			tb.Fatalf("crucible serve exited (%v):\n%s", err, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return sock, "http://" + servedAddr.FindStringSubmatch(logs.String())[1], cmd.Process.Pid
}

// waitPoolReady waits until the pool of the server at base holds all the
// sandboxes it keeps ready (its /metrics).
func waitPoolReady(tb testing.TB, base, pool string) {
	tb.Helper()
	size := regexp.MustCompile(`(?m)^crucible_pool_size\{pool="` + pool + `"\} ([0-9]+)$`)
	ready := regexp.MustCompile(`(?m)^crucible_pool_ready\{pool="` + pool + `"\} ([0-9]+)$`)
	for {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			tb.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			tb.Fatal(err)
		}
		s, r := size.FindSubmatch(body), ready.FindSubmatch(body)
		if s == nil || r == nil {
			tb.Fatalf("no pool %q in /metrics:\n%s", pool, body)
		}
		if string(s[1]) == string(r[1]) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
