package analyst

import (
	"bytes"
	"testing"
)

// The profiler reads a file's first sniffBytes, then blocks of
// blockBytes, to tell its encoding (SNIFF_BYTES and BLOCK_BYTES in
// profile.py).
const sniffBytes, blockBytes = 256 << 10, 1 << 20

// mark is text placed at a byte offset.
type mark struct {
	at   int
	text string
}

// textWith returns a one-column CSV of about size bytes, ASCII but for
// marks, in order, each starting at its offset and ending its line.
func textWith(size int, marks ...mark) []byte {
	b := []byte("name\n")
	row := append(bytes.Repeat([]byte("x"), 63), '\n')
	for _, m := range marks {
		for len(b)+len(row) < m.at {
			b = append(b, row...)
		}
		b = append(b, bytes.Repeat([]byte("y"), m.at-len(b))...)
		b = append(b, m.text+"\n"...)
	}
	for len(b) < size {
		b = append(b, row...)
	}
	return b
}

// TestEncodingOverWholeFile: the encoding is UTF-8 only when every byte
// of the file decodes, wherever the blocks the profiler reads it in
// begin and end: a character cut by a block's end still decodes, a lone
// lead byte before ASCII does not (even when a continuation byte starts
// the block after an ASCII one), and a cp1252 byte far past the
// sniffed head still makes the file cp1252 (latin-1 for a byte cp1252
// leaves undefined). Each file is profiled in a real session of the
// data-science image.
func TestEncodingOverWholeFile(t *testing.T) {
	const size = sniffBytes + 2*blockBytes
	cases := []struct {
		file string
		data []byte
		want string
	}{
		{"ascii.csv", textWith(size), "utf-8"},
		{"e acute across the head.csv", textWith(size, mark{sniffBytes - 1, "é"}), "utf-8"},
		{"e acute across a block.csv", textWith(size, mark{sniffBytes + blockBytes - 1, "é"}), "utf-8"},
		{"lone lead byte at the head's end.csv", textWith(size, mark{sniffBytes - 1, "\xc3"}), "cp1252"},
		{"lead byte, ASCII block, continuation byte.csv", textWith(size, mark{sniffBytes - 1, "\xc3"}, mark{sniffBytes + blockBytes, "\xa9"}), "cp1252"},
		{"lone lead byte at the end.csv", append(textWith(size), "x\xc3"...), "cp1252"},
		{"cp1252 past the head.csv", textWith(size, mark{sniffBytes + blockBytes + 10, "Ren\xe9"}), "cp1252"},
		{"undefined in cp1252.csv", textWith(size, mark{sniffBytes + 10, "\x81"}), "latin-1"},
		{"bom and late e acute.csv", append([]byte("\ufeff"), textWith(size, mark{size - 100, "é"})...), "utf-8-sig"},
	}
	var datasets []Dataset
	for _, c := range cases {
		datasets = append(datasets, Dataset{Name: c.file, Content: c.data})
	}
	a := openAnalysis(t, newRuntime(t), datasets...)
	for i, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			tb := a.Profile.Tables[i]
			if tb.Error != "" || tb.Reading["encoding"] != c.want {
				t.Errorf("encoding %q (error %q), want %q", tb.Reading["encoding"], tb.Error, c.want)
			}
		})
	}
}
