package sandbox

// Stream names one of a program's output streams.
type Stream string

// The output streams a program writes.
const (
	// StreamStdout is the program's standard output.
	StreamStdout Stream = "stdout"
	// StreamStderr is the program's standard error.
	StreamStderr Stream = "stderr"
)

// OutputFunc receives a program's output while it is still running, for
// callers that show progress (the HTTP API's streaming endpoints). A
// runtime calls it with each chunk as it is read, in the order the stream
// was written, and never concurrently with itself: chunks of stdout and
// stderr are delivered one at a time. Only bytes within the output limit
// are delivered, so the concatenated chunks of a stream equal the Result's
// field for it; the Result still carries the whole output. Every call is
// made before Run (or Exec) returns. chunk is only valid during the call.
//
// A slow OutputFunc slows the program's output down, never loses it; one
// that blocks forever keeps Run (or Exec) from returning, even past the
// run's limits, so it must not wait on anything unbounded, such as a
// network client: buffer instead, as the HTTP server's feeds do.
type OutputFunc func(stream Stream, chunk []byte)
