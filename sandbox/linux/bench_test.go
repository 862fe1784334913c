package linux_test

import (
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox/linux"
	bt "github.com/crucible-sandbox/crucible/sandbox/linux/benchtest"
)

// The benchmarks below run `python3 -c 'print(1)'` through the native
// runtime and the same interpreter started bare (no sandbox, an empty
// environment, the same root filesystem: the host's), in separate phases
// of one benchmark (package benchtest): ns/op is one sandboxed run back
// to back; the figures of interest are the medians and their ratio,
// x_bare (lower is better).

// BenchmarkPrint1Cold builds every sandbox inside the timed run, back to
// back: what each run costs when nothing is prepared.
func BenchmarkPrint1Cold(b *testing.B) {
	compareLatency(b, newRuntime(b, linux.Options{}), bt.Print1, false)
}

// BenchmarkPrint1Prestart takes a sandbox built ahead of time (one kept
// ready). Its figure is idle_x_bare: the latency a caller sees when runs
// are separated by idle time (an agent thinking, a person typing), which
// the pool uses to build a replacement (target: at most 1.2). Back to
// back (b2b), most runs find the pool empty and build their own.
func BenchmarkPrint1Prestart(b *testing.B) {
	compareLatency(b, newRuntime(b, linux.Options{Prestart: 1}), bt.Print1, true)
}
