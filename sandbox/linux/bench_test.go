package linux_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// benchmarkPrint1 measures `python3 -c 'print(1)'` through a runtime
// against the same interpreter started bare (no sandbox, empty
// environment, same root filesystem: the host's), alternating the two in
// one loop so that both see the same machine load. It reports the
// sandboxed time per run as ns/op, and bare_ms, sandbox_ms and the ratio
// x_bare (sandboxed ÷ bare; lower is better).
func benchmarkPrint1(b *testing.B, opts linux.Options) {
	if os.Geteuid() != 0 {
		b.Skip("the native sandbox needs root")
	}
	rt, err := linux.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	req := sandbox.Request{Language: sandbox.Python, Code: "print(1)"}
	ctx := context.Background()
	// Warm the page cache and, with Prestart, fill the pool.
	for range 3 {
		if _, err := rt.Run(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	var bare, boxed time.Duration
	b.ResetTimer()
	for b.Loop() {
		t := time.Now()
		cmd := exec.Command("/usr/bin/python3", "-c", "print(1)")
		cmd.Env = []string{}
		out, err := cmd.Output()
		if err != nil || string(out) != "1\n" {
			b.Fatalf("bare python: %q, %v", out, err)
		}
		bare += time.Since(t)

		t = time.Now()
		res, err := rt.Run(ctx, req)
		if err != nil || res.Status != sandbox.StatusOK || string(res.Stdout) != "1\n" {
			b.Fatalf("sandboxed python: %+v, %v", res, err)
		}
		boxed += time.Since(t)
	}
	n := float64(b.N)
	b.ReportMetric(float64(bare.Milliseconds())/n, "bare_ms")
	b.ReportMetric(float64(boxed.Milliseconds())/n, "sandbox_ms")
	b.ReportMetric(float64(boxed)/float64(bare), "x_bare")
}

// BenchmarkPrint1Cold builds every sandbox when its run starts.
func BenchmarkPrint1Cold(b *testing.B) { benchmarkPrint1(b, linux.Options{}) }

// BenchmarkPrint1Prestart takes sandboxes built ahead of time.
func BenchmarkPrint1Prestart(b *testing.B) { benchmarkPrint1(b, linux.Options{Prestart: 2}) }
