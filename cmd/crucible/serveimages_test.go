package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestImageNames(t *testing.T) {
	// A store where the data-science image is built (its metadata is what
	// image.Open reads) and one where it is not.
	built, empty := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(built, "datascience"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(built, "datascience", "image.json"), []byte(`{"name": "datascience"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		images []string
		rootfs string
		store  string
		want   []string
		err    string // a part of the error; "" for none
	}{
		{nil, "", empty, []string{"host"}, ""},
		{nil, "", built, []string{"host", "datascience"}, ""},
		{nil, "/srv/root", built, []string{"rootfs"}, ""},
		{[]string{"datascience"}, "", built, []string{"datascience"}, ""},
		{[]string{"host"}, "", built, []string{"host"}, ""},
		{[]string{"datascience", "host"}, "", built, []string{"datascience", "host"}, ""},
		{[]string{"host", "datascience"}, "", built, []string{"host", "datascience"}, ""},
		{[]string{"datascience", "datascience"}, "", built, nil, "--image datascience is given twice"},
		{[]string{"datascience"}, "/srv/root", built, nil, "give --rootfs or --image, not both"},
	} {
		got, err := imageNames(tc.images, tc.rootfs, tc.store, runtimeChoice{name: runtimeNative})
		switch {
		case tc.err == "" && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("imageNames(%q, %q) = %q, %v; want %q", tc.images, tc.rootfs, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("imageNames(%q, %q): error %v, want one saying %q", tc.images, tc.rootfs, err, tc.err)
		}
	}
}
