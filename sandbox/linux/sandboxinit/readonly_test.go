package sandboxinit

import (
	"os"
	"slices"
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
		if got := FileMode(tc.f); got != tc.want {
			t.Errorf("%s: FileMode = %o, want %o", tc.name, got, tc.want)
		}
	}
}

func TestReadOnlyDirs(t *testing.T) {
	ro := func(name string) FileHeader { return FileHeader{Name: name, ReadOnly: true} }
	for _, tc := range []struct {
		name  string
		files []FileHeader
		want  []string
	}{
		{"none", nil, nil},
		{"top level", []FileHeader{ro("a.csv")}, nil},
		{"writable only", []FileHeader{{Name: "data/a.csv"}}, nil},
		{"one dir", []FileHeader{ro("data/a.csv"), ro("data/b.csv")}, []string{"data"}},
		{"nested, child first", []FileHeader{ro("data/x/y/a.csv")}, []string{"data/x/y", "data/x", "data"}},
		{"shared parent once", []FileHeader{ro("data/x/a.csv"), ro("data/y/b.csv"), {Name: "data/z/c.csv"}},
			[]string{"data/x", "data", "data/y"}},
	} {
		if got := ReadOnlyDirs(tc.files); !slices.Equal(got, tc.want) {
			t.Errorf("%s: ReadOnlyDirs = %q, want %q", tc.name, got, tc.want)
		}
	}
}
