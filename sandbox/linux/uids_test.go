package linux

import (
	"strings"
	"testing"
)

func TestCheckUIDRange(t *testing.T) {
	for _, tc := range []struct {
		base, count int
		err         string // a part of the error; "" for none
	}{
		{DefaultUIDBase, DefaultUIDCount, ""},
		{65536, 1, ""},
		{maxUID, 1, ""},
		{maxUID - 9, 10, ""},
		{0, 10, "uid base must be at least 65536"},
		{1000, 10, "uid base must be at least 65536"},
		{65534, 10, "uid base must be at least 65536"},
		{100000, 0, "uid count must be at least 1"},
		{100000, -5, "uid count must be at least 1"},
		{maxUID - 9, 11, "must end by 4294967295"},
		{maxUID + 1, 1, "must end by 4294967295"},
	} {
		err := CheckUIDRange(tc.base, tc.count)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("CheckUIDRange(%d, %d) = %v, want nil", tc.base, tc.count, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("CheckUIDRange(%d, %d) = %v, want an error saying %q", tc.base, tc.count, err, tc.err)
		}
	}
}
