package kernel

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
)

// FigureLabelsKey is the keyword of the PNG text chunk (tEXt) in which the
// Python kernel records a captured figure's labels, as JSON FigureLabels.
const FigureLabelsKey = "crucible:figure"

// maxLabelsChunk bounds the labels chunk read: the kernel writes at most
// 16 axes of three 200-character labels, escaped as ASCII.
const maxLabelsChunk = 64 << 10

// FigureLabels are a matplotlib figure's title and its axes' labels.
type FigureLabels struct {
	// Title is the figure's suptitle, empty when it has none.
	Title string `json:"title"`
	// Axes hold each axes' title and labels, in the figure's order (at
	// most 16).
	Axes []AxesLabels `json:"axes"`
}

// AxesLabels are one axes' title and axis labels.
type AxesLabels struct {
	Title  string `json:"title"`
	XLabel string `json:"xlabel"`
	YLabel string `json:"ylabel"`
}

var pngSignature = []byte("\x89PNG\r\n\x1a\n")

// ReadFigureLabels returns the labels recorded in png, a figure the
// kernel captured; ok is false when png holds none that can be read. The
// PNG is the sandbox's: the chunks are walked with every length checked,
// and a labels chunk over 64 KiB is ignored.
func ReadFigureLabels(png []byte) (labels FigureLabels, ok bool) {
	rest, found := bytes.CutPrefix(png, pngSignature)
	if !found {
		return labels, false
	}
	for len(rest) >= 12 {
		n := binary.BigEndian.Uint32(rest)
		kind := string(rest[4:8])
		if uint64(n) > uint64(len(rest)-12) || kind == "IEND" {
			return labels, false
		}
		data := rest[8 : 8+n]
		rest = rest[12+n:]
		if kind != "tEXt" || n > maxLabelsChunk {
			continue
		}
		key, text, found := bytes.Cut(data, []byte{0})
		if !found || string(key) != FigureLabelsKey {
			continue
		}
		// tEXt is Latin-1; the kernel writes ASCII JSON, so anything else
		// is not its chunk.
		return labels, json.Unmarshal(text, &labels) == nil
	}
	return labels, false
}
