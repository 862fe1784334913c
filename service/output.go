package service

import (
	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// outputRedactor turns a runtime's OutputFunc calls into redacted stdout
// and stderr chunks: a secret is never let out, even split across chunks.
type outputRedactor struct {
	streams [2]*policy.StreamRedactor
}

// newOutputRedactor returns an outputRedactor that passes each redacted
// piece to emit, with EventStdout or EventStderr.
func newOutputRedactor(r *policy.Redactor, emit func(EventKind, sandbox.Data)) *outputRedactor {
	o := &outputRedactor{}
	for i, kind := range []EventKind{EventStdout, EventStderr} {
		o.streams[i] = r.NewStream(func(b []byte) { emit(kind, sandbox.Data(b)) })
	}
	return o
}

// output is the sandbox.OutputFunc; the runtime never calls it
// concurrently, which the StreamRedactors need.
func (o *outputRedactor) output(stream sandbox.Stream, chunk []byte) {
	i := 0
	if stream == sandbox.StreamStderr {
		i = 1
	}
	_, _ = o.streams[i].Write(chunk)
}

// flush emits what the redactors hold back; call it once the run ended.
func (o *outputRedactor) flush() {
	for _, s := range o.streams {
		s.Flush()
	}
}

// redactedOutput returns an outputRedactor that passes the redacted output
// on to onOutput.
func redactedOutput(r *policy.Redactor, onOutput sandbox.OutputFunc) *outputRedactor {
	return newOutputRedactor(r, func(k EventKind, d sandbox.Data) { onOutput(sandbox.Stream(k), d) })
}
