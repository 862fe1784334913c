package main

import (
	"slices"
	"strings"
	"testing"
)

func TestImageNames(t *testing.T) {
	for _, tc := range []struct {
		images []string
		rootfs string
		want   []string
		err    string // a part of the error; "" for none
	}{
		{nil, "", []string{"host"}, ""},
		{nil, "/srv/root", []string{"rootfs"}, ""},
		{[]string{"datascience"}, "", []string{"datascience"}, ""},
		{[]string{"datascience", "host"}, "", []string{"datascience", "host"}, ""},
		{[]string{"host", "datascience"}, "", []string{"host", "datascience"}, ""},
		{[]string{"datascience", "datascience"}, "", nil, "--image datascience is given twice"},
		{[]string{"datascience"}, "/srv/root", nil, "give --rootfs or --image, not both"},
	} {
		got, err := imageNames(tc.images, tc.rootfs)
		switch {
		case tc.err == "" && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("imageNames(%q, %q) = %q, %v; want %q", tc.images, tc.rootfs, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("imageNames(%q, %q): error %v, want one saying %q", tc.images, tc.rootfs, err, tc.err)
		}
	}
}
