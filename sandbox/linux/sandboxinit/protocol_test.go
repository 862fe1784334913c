package sandboxinit

import (
	"bytes"
	"testing"
	"testing/iotest"
)

func TestProtocolRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	in := RunConfig{Code: "print('é')", Argv: []string{"/usr/bin/python3"}, Files: []FileHeader{{Name: "a", Size: 3}}}
	if err := WriteMessage(&buf, &in, [][]byte{[]byte("abc")}); err != nil {
		t.Fatal(err)
	}
	var out RunConfig
	r := iotest.OneByteReader(&buf)
	if err := ReadMessage(r, &out); err != nil {
		t.Fatal(err)
	}
	if out.Code != in.Code || out.Files[0] != in.Files[0] {
		t.Fatalf("got %+v", out)
	}
	rest := make([]byte, 3)
	if _, err := r.Read(rest[:1]); err != nil || rest[0] != 'a' {
		t.Fatalf("file bytes lost: %q %v", rest, err)
	}
	huge := []byte{0xff, 0, 0, 0, 0, 0, 0, 0}
	if err := ReadMessage(bytes.NewReader(huge), &out); err == nil {
		t.Fatal("oversized message accepted")
	}
}
