package docker

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// maxFrameRead is the most bytes read from the stream at once: a frame
// larger than this (the daemon says its size in the frame's header) is read
// in pieces, so the host never holds more than this of output beyond what
// the output limit keeps.
const maxFrameRead = 32 << 10

// captured is what was kept of the program's output.
type captured struct {
	out, err           bytes.Buffer
	outTrunc, errTrunc bool
}

// readOutput reads the exec's multiplexed output stream (no TTY: each
// frame is an 8-byte header, [stream, 0, 0, 0, size as big-endian uint32],
// then size bytes) into c until the stream ends or stdout and stderr
// together reach limit bytes; then it calls onLimit, which has the
// container killed, and reads the rest of the stream to its end,
// discarding it: the daemon holds the container's end until its copy of
// the output is done, and what is left is what the dead processes' pipes
// held. Each chunk
// kept is handed to onOutput (which may be nil) before the next read, so a
// slow consumer slows the program down instead of output piling up here.
// The stream's end returns nil.
func readOutput(r io.Reader, limit int64, onOutput sandbox.OutputFunc, onLimit func(), c *captured) error {
	var hdr [8]byte
	buf := make([]byte, maxFrameRead)
	remaining := limit
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		var dst *bytes.Buffer
		var trunc *bool
		var name sandbox.Stream
		switch hdr[0] {
		case 1:
			dst, trunc, name = &c.out, &c.outTrunc, sandbox.StreamStdout
		case 2:
			dst, trunc, name = &c.err, &c.errTrunc, sandbox.StreamStderr
		default:
			return fmt.Errorf("output stream: frame of unknown stream %d", hdr[0])
		}
		size := int64(binary.BigEndian.Uint32(hdr[4:]))
		for size > 0 {
			n := min(size, maxFrameRead)
			if _, err := io.ReadFull(r, buf[:n]); err != nil {
				return err
			}
			size -= n
			keep := min(n, remaining)
			remaining -= keep
			dst.Write(buf[:keep])
			if keep > 0 && onOutput != nil {
				onOutput(name, buf[:keep])
			}
			if keep < n {
				*trunc = true
				onLimit()
				_, err := io.Copy(io.Discard, r)
				return err
			}
		}
	}
}
