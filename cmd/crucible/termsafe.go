package main

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/transform"
)

// inertText is a transform.Transformer that makes text safe to show on a
// terminal: it writes every byte or character a terminal would act on, rather
// than show, as a visible escape in Go's notation, so the text can neither
// move the cursor, erase or conceal what the CLI prints, set the clipboard
// or the window title (OSC 52, OSC 0), nor reverse the reading order.
//
// Security: a sandboxed program or a model chooses these bytes, and the
// person reading the terminal must see what they are, so:
//   - C0 controls (but \n and \t), DEL and C1 controls (U+0080-U+009F)
//     become \x1b, \x7f, \u009b: with ESC and the 8-bit CSI, OSC, DCS, APC,
//     PM and ST shown as text, no escape sequence of any kind can start, and
//     the rest of one is plain text; nothing needs parsing.
//   - a lone \r becomes \r: it would return to the line's start and let the
//     text overwrite what precedes it. \r\n stays: it only ends a line.
//   - a byte that is not UTF-8 becomes \x9b: some terminals take a raw 0x9b
//     as CSI.
//   - the bidirectional controls (Unicode's Bidi_Control: the overrides and
//     embeddings U+202A-U+202E, the isolates U+2066-U+2069 and the marks
//     U+200E, U+200F, U+061C) become \u202e: they reorder what follows.
//
// It is streaming-safe: a \r or a multibyte character split between two
// writes is held (transform.ErrShortSrc) until the next write or the end.
type inertText struct{ transform.NopResetter }

// Transform implements transform.Transformer.
func (inertText) Transform(dst, src []byte, atEOF bool) (nDst, nSrc int, err error) {
	for nSrc < len(src) {
		c, size, keep := src[nSrc], 1, false
		switch {
		case c == '\r':
			if nSrc+1 == len(src) && !atEOF {
				return nDst, nSrc, transform.ErrShortSrc
			}
			if keep = nSrc+1 < len(src) && src[nSrc+1] == '\n'; keep {
				size = 2
			}
		case c < utf8.RuneSelf:
			keep = c == '\n' || c == '\t' || c >= 0x20 && c != 0x7f
		default:
			var r rune
			r, size = utf8.DecodeRune(src[nSrc:])
			if r == utf8.RuneError && size == 1 && !atEOF && !utf8.FullRune(src[nSrc:]) {
				return nDst, nSrc, transform.ErrShortSrc
			}
			keep = !(r == utf8.RuneError && size == 1) && !unicode.IsControl(r) && !unicode.Is(unicode.Bidi_Control, r)
		}
		shown := src[nSrc : nSrc+size]
		if !keep {
			shown = visibleEscape(src[nSrc : nSrc+size])
		}
		if nDst+len(shown) > len(dst) {
			return nDst, nSrc, transform.ErrShortDst
		}
		nDst += copy(dst[nDst:], shown)
		nSrc += size
	}
	return nDst, nSrc, nil
}

// visibleEscape writes one byte or character in Go's escaped notation:
// \r, \x1b, \x9b for a byte, \u202e for a character.
func visibleEscape(b []byte) []byte {
	if b[0] == '\r' {
		return []byte(`\r`)
	}
	if r, size := utf8.DecodeRune(b); size > 1 {
		return fmt.Appendf(nil, `\u%04x`, r)
	}
	return fmt.Appendf(nil, `\x%02x`, b[0])
}

// inert returns s as inertText shows it.
func inert(s string) string {
	out, _, _ := transform.String(inertText{}, s)
	return out
}
