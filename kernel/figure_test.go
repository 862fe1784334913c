package kernel

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"reflect"
	"testing"
)

// chunk is one PNG chunk with its length and CRC.
func chunk(kind string, data []byte) []byte {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.BigEndian, uint32(len(data)))
	b.WriteString(kind)
	b.Write(data)
	_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(append([]byte(kind), data...)))
	return b.Bytes()
}

// png assembles a PNG signature and chunks (the image data is not real:
// ReadFigureLabels reads chunk headers and text only).
func png(chunks ...[]byte) []byte {
	return bytes.Join(append([][]byte{pngSignature}, chunks...), nil)
}

func text(key, value string) []byte { return chunk("tEXt", []byte(key+"\x00"+value)) }

// Proves ReadFigureLabels finds the kernel's chunk among others, and
// reads nothing from input that is not such a PNG or whose lengths lie.
func TestReadFigureLabels(t *testing.T) {
	ihdr := chunk("IHDR", make([]byte, 13))
	iend := chunk("IEND", nil)
	labels := `{"title":"Sales","axes":[{"title":"By month","xlabel":"month","ylabel":"revenue (\u20ac)"}]}`
	want := FigureLabels{Title: "Sales", Axes: []AxesLabels{{Title: "By month", XLabel: "month", YLabel: "revenue (€)"}}}
	good := png(ihdr, text("Software", "matplotlib"), text(FigureLabelsKey, labels), chunk("IDAT", []byte("x")), iend)
	lying := png(ihdr, text(FigureLabelsKey, labels))
	binary.BigEndian.PutUint32(lying[len(pngSignature)+len(ihdr):], 1<<31)
	for _, tc := range []struct {
		name string
		png  []byte
		want FigureLabels
		ok   bool
	}{
		{"labels among other chunks", good, want, true},
		{"after the image data", png(ihdr, chunk("IDAT", []byte("x")), text(FigureLabelsKey, labels), iend), want, true},
		{"no labels", png(ihdr, text("Software", "matplotlib"), iend), FigureLabels{}, false},
		{"another key", png(ihdr, text("crucible:figures", labels), iend), FigureLabels{}, false},
		{"after IEND", png(ihdr, iend, text(FigureLabelsKey, labels)), FigureLabels{}, false},
		{"not JSON", png(ihdr, text(FigureLabelsKey, "{title"), iend), FigureLabels{}, false},
		{"over 64 KiB", png(ihdr, text(FigureLabelsKey, `{"title":"`+string(bytes.Repeat([]byte("a"), 70_000))+`"}`), iend), FigureLabels{}, false},
		{"a length past the end", lying, FigureLabels{}, false},
		{"cut in the image data", good[:len(good)-20], want, true},
		{"cut in the labels", good[:len(good)-30], FigureLabels{}, false},
		{"not a PNG", []byte("GIF89a" + labels), FigureLabels{}, false},
		{"empty", nil, FigureLabels{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ReadFigureLabels(tc.png)
			if ok != tc.ok || !reflect.DeepEqual(got, tc.want) && tc.ok {
				t.Errorf("ReadFigureLabels = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
