//go:build crucible_initexe

package initexe

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestEmbeddedSealed proves the embedded init is what sandboxes start
// from, and that nobody can change it: the memfd refuses writes, growth,
// truncation and new seals, also through a fresh open of its path.
func TestEmbeddedSealed(t *testing.T) {
	if !Embedded() {
		t.Fatal("built with crucible_initexe but nothing embedded")
	}
	p, err := Path()
	if err != nil {
		t.Fatal(err)
	}
	if want := "/proc/" + strconv.Itoa(os.Getpid()) + "/fd/"; !strings.HasPrefix(p, want) {
		t.Fatalf("Path() = %q, want it under %s", p, want)
	}
	if again, _ := Path(); again != p {
		t.Errorf("second Path() = %q, want the same memfd %q", again, p)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, embedded) || !bytes.HasPrefix(got, []byte("\x7fELF")) {
		t.Fatalf("the memfd holds %d bytes, want the embedded ELF's %d", len(got), len(embedded))
	}
	seals, err := unix.FcntlInt(memfd.Fd(), unix.F_GET_SEALS, 0)
	if err != nil {
		t.Fatal(err)
	}
	const want = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if seals&want != want {
		t.Errorf("seals %#x, want %#x", seals, want)
	}
	if _, err := memfd.WriteAt([]byte("x"), 0); !errors.Is(err, syscall.EPERM) {
		t.Errorf("write through the descriptor: %v, want EPERM", err)
	}
	if f, err := os.OpenFile(p, os.O_WRONLY, 0); err == nil {
		_, werr := f.Write([]byte("x"))
		f.Close()
		if werr == nil {
			t.Error("write through a fresh open of the path succeeded")
		}
	}
	if err := os.Truncate(p, 0); err == nil {
		t.Error("truncating the memfd succeeded")
	}
	if _, err := unix.FcntlInt(memfd.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_FUTURE_WRITE); err == nil {
		t.Error("adding a seal succeeded after F_SEAL_SEAL")
	}
}
