package policy

import (
	"bytes"
	"io"
	"maps"
	"unicode/utf8"
)

const (
	// streamHold bounds what a StreamRedactor holds back. Past it, a line
	// (or a private key block) is emitted in pieces: holding more would let
	// a program that prints no newline grow the server's memory without
	// limit and keep its client waiting forever.
	streamHold = 64 << 10
	// streamMargin is how far before the end of the held part a forced cut
	// must be, so a credential near the cut is seen whole when choosing it.
	streamMargin = 1 << 10
)

// StreamRedactor redacts one output stream delivered in chunks, such as a
// program's stdout sent to an HTTP client while the program runs, so that no
// chunk boundary lets a secret out in pieces. It emits complete lines only,
// each batch redacted by Redactor.Redact, and holds back a partial line until
// its newline arrives or Flush. While a PEM private key block is open (its
// BEGIN line seen, its END line not yet), it holds the whole block, so the
// block is redacted as one. A Redactor that hides nothing (an empty
// RedactConfig, as the CLI's) holds nothing back: each chunk is emitted as
// it comes, so a prompt or a progress line shows at once.
//
// The concatenation of everything emitted, after Flush, equals Redact of the
// whole stream (and Counts equals its counts) when every line and every
// private key block is at most 64 KiB, no configured secret or host path
// contains a newline, and each Extra expression matches within one line
// without ^, $, \A or \z (which would see each batch as the whole text).
// Secrets containing '\n' are only guaranteed to be hidden in the final,
// non-streamed result.
//
// Memory is bounded: at most 64 KiB is held between calls. When the held part
// grows past that, the first 32 to 63 KiB of it are redacted and emitted:
// the cut goes after the last whitespace at least 1 KiB before the 64 KiB
// mark that is not inside any match found in those 64 KiB (key names and
// "Bearer " included, so a credential and its context stay on one side);
// else at the last such position that starts a UTF-8 character; else, when
// one match covers all candidates, 63 KiB in. The residual risk is a
// credential that straddles the cut yet was not found before it: one whose
// match would run more than 1 KiB past the cut and whose beginning alone
// does not match (a configured secret over 1 KiB long, a quoted password
// over 1 KiB long with spaces in it), or the rest of a match longer than
// 31 KiB (the tail of a private key block that size, which no real key is).
// A match split by a cut is counted once per side.
//
// Binary (non-UTF-8) bytes pass through unchanged outside redactions. A
// StreamRedactor is not safe for concurrent use.
type StreamRedactor struct {
	r    *Redactor
	emit func([]byte)
	// buf is held back, not yet emitted; buf[:lines] is complete lines,
	// already followed by keys.
	buf    []byte
	lines  int
	keys   keyScan
	counts Counts
}

// StreamRedactor is an io.Writer, so output can be copied into it.
var _ io.Writer = (*StreamRedactor)(nil)

// NewStream returns a StreamRedactor that passes redacted text to emit, in
// order, from Write and Flush; never an empty slice. emit may keep the slice
// it is given: the StreamRedactor never writes to it again.
func (r *Redactor) NewStream(emit func([]byte)) *StreamRedactor {
	return &StreamRedactor{r: r, emit: emit, counts: Counts{}}
}

// Write takes the next chunk: it emits the redacted complete lines and holds
// back the rest. It does not keep p, and never fails.
func (s *StreamRedactor) Write(p []byte) (int, error) {
	n := len(p)
	if s.r.hidesNothing() { // nothing to wait for: p goes as it comes
		if n > 0 {
			s.emit(bytes.Clone(p))
		}
		return n, nil
	}
	// Take p in pieces so that a huge chunk costs no more memory than the
	// held part's bound.
	for len(p) > 0 {
		k := min(len(p), streamHold)
		s.add(p[:k])
		p = p[k:]
	}
	return n, nil
}

// Flush redacts and emits everything held back. Call it at the end of the
// stream; text written afterwards starts afresh.
func (s *StreamRedactor) Flush() {
	if len(s.buf) > 0 {
		s.send(len(s.buf))
	}
	s.lines, s.keys = 0, keyScan{}
}

// Counts returns how many replacements of each kind were made so far.
func (s *StreamRedactor) Counts() Counts {
	return maps.Clone(s.counts)
}

// add appends p, of at most streamHold bytes, and emits what may go.
func (s *StreamRedactor) add(p []byte) {
	old := len(s.buf)
	s.buf = append(s.buf, p...)
	if i := bytes.LastIndexByte(p, '\n'); i >= 0 {
		s.complete(old + i + 1)
	}
	for {
		end := s.lines
		if s.keys.open {
			end = s.keys.lineStart
		}
		if end > 0 {
			s.send(end)
		}
		if len(s.buf) <= streamHold {
			return
		}
		s.send(s.cut())
		// The cut may have emitted an open key block's BEGIN line: follow
		// the lines still held afresh, as the start of a new stream.
		lines := s.lines
		s.lines, s.keys = 0, keyScan{}
		s.complete(lines)
	}
}

// complete records that buf[:to] is complete lines, following the private
// key markers in the new ones.
func (s *StreamRedactor) complete(to int) {
	if s.r.keys {
		s.keys.scan(s.buf, s.lines, to)
	}
	s.lines = to
}

// send redacts and emits buf[:n] and drops it from buf.
func (s *StreamRedactor) send(n int) {
	out, c := s.r.Redact(s.buf[:n])
	s.counts.Add(c)
	// A fresh buffer for the rest, because out may be buf itself and emit
	// may keep it.
	s.buf = bytes.Clone(s.buf[n:])
	s.lines = max(s.lines-n, 0)
	s.keys.shift(n)
	s.emit(out)
}

// cut returns where to split buf, which has grown past streamHold: a point
// between streamHold/2 and streamHold-streamMargin, chosen as the
// StreamRedactor doc comment describes. Each cut emits at least streamHold/2
// bytes for the streamHold it examines, so the work stays linear.
func (s *StreamRedactor) cut() int {
	w := s.buf[:streamHold]
	lo, hi := streamHold/2, streamHold-streamMargin
	// inside[c] > 0 when c is strictly inside a match, after summing the
	// +1 at each match's from+1 and -1 at its to.
	inside := make([]int32, hi+2)
	for _, sp := range s.r.find(w) {
		if a, b := sp.from+1, min(sp.to, hi+1); a < b {
			inside[a]++
			inside[b]--
		}
	}
	for c := 1; c <= hi; c++ {
		inside[c] += inside[c-1]
	}
	other := -1
	for c := hi; c >= lo; c-- {
		if inside[c] > 0 {
			continue
		}
		if isSpace(w[c-1]) {
			return c
		}
		if other < 0 && utf8.RuneStart(w[c]) {
			other = c
		}
	}
	if other >= 0 {
		return other
	}
	return hi
}

// isSpace reports whether c is ASCII white space, where text can be cut
// without splitting a word.
func isSpace(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\v', '\f', '\r':
		return true
	}
	return false
}

// privateKeyMarker is in every BEGIN and END line privateKeys pairs.
var privateKeyMarker = []byte("PRIVATE KEY")

// keyScan follows privateKeys's pairing of BEGIN and END lines over a
// stream's complete lines as they arrive, searching each byte once, to tell
// whether a key block is open. Offsets are into the StreamRedactor's buf.
type keyScan struct {
	open bool
	// lineStart is where the held part starts while a block is open: the
	// start of its BEGIN line, or of an earlier block's BEGIN line when that
	// block closed on the line this one opens on.
	lineStart int
	beginEnd  int // end of the open block's BEGIN marker: earlier ENDs don't close it
	pos       int // end of the last closed block: BEGINs before it are inside it
	// nextBegin and nextEnd are where the searches for the next BEGIN and
	// END resume, so each finds the same non-overlapping markers as
	// FindAllIndex on the whole text does in privateKeys.
	nextBegin, nextEnd int
}

// scan follows the markers in the complete lines b[from:to].
func (k *keyScan) scan(b []byte, from, to int) {
	if !bytes.Contains(b[from:to], privateKeyMarker) {
		return // no marker there; markers never span lines
	}
	for ls := from; ls < to; {
		le := ls + bytes.IndexByte(b[ls:to], '\n') + 1
		for {
			if !k.open {
				i := max(k.nextBegin, ls)
				m := pemBegin.FindIndex(b[i:le])
				if m == nil {
					break
				}
				k.nextBegin = i + m[1]
				if i+m[0] >= k.pos {
					// A block that closed on this line must be held with
					// this one: keep the line its BEGIN was on.
					if k.pos <= ls {
						k.lineStart = ls
					}
					k.open, k.beginEnd = true, i+m[1]
				}
				continue
			}
			i := max(k.nextEnd, ls)
			m := pemEnd.FindIndex(b[i:le])
			if m == nil {
				break
			}
			k.nextEnd = i + m[1]
			if i+m[0] >= k.beginEnd {
				k.open, k.pos = false, i+m[1]
			}
		}
		ls = le
	}
}

// shift accounts for the first n bytes of buf being emitted. Between lines,
// n is a line start not past an open block's BEGIN line, so whatever an
// offset clamped to 0 pointed at can no longer matter; after a cut or Flush,
// the scan starts afresh instead.
func (k *keyScan) shift(n int) {
	k.lineStart = max(k.lineStart-n, 0)
	k.beginEnd = max(k.beginEnd-n, 0)
	k.pos = max(k.pos-n, 0)
	k.nextBegin = max(k.nextBegin-n, 0)
	k.nextEnd = max(k.nextEnd-n, 0)
}
