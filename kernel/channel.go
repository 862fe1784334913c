package kernel

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	units "github.com/docker/go-units"
)

// MaxReplyBytes bounds one kernel reply: four times the largest artifact
// budget a default session has, in base64, and then some.
const MaxReplyBytes = 64 << 20

// ErrChannelClosed is why a reply channel breaks at end-of-file: the
// kernel closed it, most often by exiting.
var ErrChannelClosed = errors.New("the kernel closed it")

// ReadChannel is the host's reader of a kernel's reply channel r, for
// every runtime: it sends the kernel's greeting on ready (or closes ready
// when the first line is none), then each reply on replies, in order,
// until the channel breaks, and returns why: ErrChannelClosed at
// end-of-file, else what was wrong. It closes neither ready (but when
// there is no greeting) nor replies.
//
// Security: the program shares the kernel's process and can write to the
// channel. A line longer than MaxReplyBytes, or one that is not a reply,
// breaks the channel for good (the session reading it kills the sandbox):
// skipping such a line would let the program keep the host reading, and
// guessing where the next reply starts is guessing what the program wants.
func ReadChannel(r io.Reader, ready chan<- Ready, replies chan<- Reply) error {
	sc := newReplyLines(r, MaxReplyBytes)
	if !sc.scan() {
		close(ready)
		return fmt.Errorf("no greeting: %w", cmpErr(sc.err))
	}
	var hello Ready
	if err := json.Unmarshal(sc.bytes(), &hello); err != nil || !hello.Ready {
		close(ready)
		return errors.New("the first line is not the kernel's greeting")
	}
	ready <- hello
	for sc.scan() {
		var reply Reply
		if err := json.Unmarshal(sc.bytes(), &reply); err != nil {
			return fmt.Errorf("a line that is not a reply (%v)", err)
		}
		replies <- reply
	}
	if errors.Is(sc.err, bufio.ErrTooLong) {
		return fmt.Errorf("a line longer than %s, the most a reply may be", units.BytesSize(MaxReplyBytes))
	}
	return cmpErr(sc.err)
}

// cmpErr is err, or ErrChannelClosed for a clean end.
func cmpErr(err error) error {
	if err == nil {
		return ErrChannelClosed
	}
	return err
}
