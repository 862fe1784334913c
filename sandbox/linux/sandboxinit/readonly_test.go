package sandboxinit

import (
	"os"
	"testing"
)

func TestFileMode(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    FileHeader
		want os.FileMode
	}{
		{"plain", FileHeader{}, 0o644},
		{"executable", FileHeader{Executable: true}, 0o755},
		{"read-only", FileHeader{ReadOnly: true}, 0o444},
		{"read-only executable", FileHeader{ReadOnly: true, Executable: true}, 0o555},
	} {
		if got := fileMode(tc.f); got != tc.want {
			t.Errorf("%s: fileMode = %o, want %o", tc.name, got, tc.want)
		}
	}
}
