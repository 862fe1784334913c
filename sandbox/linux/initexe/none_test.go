//go:build !crucible_initexe

package initexe

import "testing"

// TestSelfWithoutEmbedded proves a build without crucible-init starts
// sandboxes from its own binary.
func TestSelfWithoutEmbedded(t *testing.T) {
	if Embedded() {
		t.Fatal("built without crucible_initexe but something embedded")
	}
	if p, err := Path(); err != nil || p != "/proc/self/exe" {
		t.Fatalf("Path() = %q, %v; want /proc/self/exe", p, err)
	}
}
