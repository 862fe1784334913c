package analyst

import "testing"

func TestBriefly(t *testing.T) {
	for _, tc := range []struct{ msg, want string }{
		{"No module named 'pandas'", "No module named 'pandas'"},
		{"\n\nIMPORTANT: PLEASE READ THIS\n\nmany reasons\n\nOriginal error was: PyCapsule_Import could not import module \"datetime\"\n", `PyCapsule_Import could not import module "datetime"`},
		{"first\nsecond", "first"},
		{"", ""},
	} {
		if got := briefly(tc.msg); got != tc.want {
			t.Errorf("briefly(%q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
}
