package kernel

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Display is one display() of a cell, as the kernel sends it in a Reply
// (python_notebook.py's nb_display).
type Display struct {
	// MIME is the representation's media type.
	MIME string `json:"mime"`
	// Data is the representation: text, or base64 when Base64 is set.
	Data string `json:"data"`
	// Base64 marks Data as base64 (a PNG).
	Base64 bool `json:"base64,omitempty"`
	// Text is the object's repr.
	Text string `json:"text"`
}

// ResultDisplays turns a reply's displays into a Result's, keeping what
// the bounds allow: at most sandbox.MaxDisplays, a Text cut at
// sandbox.MaxDisplayText characters, data only of a media type in
// sandbox.DisplayMIMEs (any other is text/plain), valid (UTF-8 text, a
// PNG with its signature) and within its bound, and in all at most budget
// bytes of data; data over a bound is omitted, saying so. It returns the
// displays and the bytes of data they hold.
//
// Security: the reply is written by the kernel's process, which the cell
// shares; nothing of it is trusted, and its size is the cell's to choose
// up to the reply channel's line limit.
func ResultDisplays(ds []Display, budget int64) ([]sandbox.Display, int64) {
	if len(ds) == 0 {
		return nil, 0
	}
	ds = ds[:min(len(ds), sandbox.MaxDisplays)]
	out := make([]sandbox.Display, 0, len(ds))
	var used int64
	for _, d := range ds {
		r := sandbox.Display{MIME: d.MIME, Text: cutText(d.Text, sandbox.MaxDisplayText)}
		if !slices.Contains(sandbox.DisplayMIMEs, d.MIME) {
			r.MIME = "text/plain"
		}
		if r.MIME == "text/plain" {
			out = append(out, r)
			continue
		}
		data, limit, err := displayData(r.MIME, d)
		switch {
		case err != nil:
			r.Omitted = err.Error()
		case int64(len(data)) > limit:
			r.Omitted = fmt.Sprintf("%d bytes of %s, over the %d a display may have", len(data), r.MIME, limit)
		case used+int64(len(data)) > budget:
			r.Omitted = fmt.Sprintf("%d bytes of %s, over what is left of the cell's artifact budget", len(data), r.MIME)
		default:
			r.Data, used = data, used+int64(len(data))
		}
		out = append(out, r)
	}
	return out, used
}

var pngMagic = []byte("\x89PNG\r\n\x1a\n")

// displayData decodes d's data as mime has it, and returns the bound of
// its size.
func displayData(mime string, d Display) ([]byte, int64, error) {
	if mime == "image/png" {
		if !d.Base64 {
			return nil, 0, fmt.Errorf("image/png data not in base64")
		}
		if base64.StdEncoding.DecodedLen(len(d.Data)) > sandbox.MaxDisplayImage+3 {
			return nil, 0, fmt.Errorf("about %d bytes of image/png, over the %d a display may have", base64.StdEncoding.DecodedLen(len(d.Data)), sandbox.MaxDisplayImage)
		}
		png, err := base64.StdEncoding.DecodeString(d.Data)
		if err != nil || !bytes.HasPrefix(png, pngMagic) {
			return nil, 0, fmt.Errorf("image/png data that is not a PNG")
		}
		return png, sandbox.MaxDisplayImage, nil
	}
	if d.Base64 || !utf8.ValidString(d.Data) {
		return nil, 0, fmt.Errorf("%s data that is not UTF-8 text", mime)
	}
	return []byte(d.Data), sandbox.MaxDisplayRich, nil
}

// cutText cuts s to at most n characters, marking the cut with "…".
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for k := 0; k < n && i < len(s); k++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	if i >= len(s) {
		return s
	}
	return s[:i] + "…"
}
