package linux_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// readChars returns the bytes this process has read so far, by any read
// call (rchar: tmpfs reads never reach a disk, so read_bytes misses them).
func readChars(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/io")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "rchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no rchar in /proc/self/io")
	return 0
}

// TestSessionSparseArtifacts proves a cell that leaves 200 files of 64
// MiB, all holes, costs the host in proportion to the data written, not
// to the 12.8 GiB the files claim: this process reads less than the
// artifact budget, every file is listed with its content omitted, and no
// digest is claimed for a file the host did not read.
func TestSessionSparseArtifacts(t *testing.T) {
	const files, size = 200, 64 << 20
	s := newSession(t, newRuntime(t, linux.Options{}), sandbox.Limits{})
	zeros := sha256.New()
	zeros.Write(make([]byte, size))
	zerosSum := hex.EncodeToString(zeros.Sum(nil))
	lim := sandbox.Limits{}.WithDefaults()
	code := fmt.Sprintf(`for i in range(%d):
    with open('sparse-%%03d.bin' %% i, 'wb') as f:
        f.truncate(%d)`, files, size)
	before := readChars(t)
	res := execCode(t, s, code)
	read := readChars(t) - before
	wantOK(t, res)
	t.Logf("the host read %d bytes to collect the cell's artifacts", read)
	if read > lim.ArtifactBytes {
		t.Errorf("the host read %d bytes for %d sparse files holding no data, over the artifact budget of %d", read, files, lim.ArtifactBytes)
	}
	if len(res.Artifacts) != files {
		t.Errorf("%d artifacts, want all %d files listed", len(res.Artifacts), files)
	}
	for _, a := range res.Artifacts {
		if a.Size != size || !a.ContentOmitted || len(a.Content) != 0 || (a.SHA256 != "" && a.SHA256 != zerosSum) {
			t.Errorf("artifact %s: size %d, omitted %v, %d bytes of content, sha256 %q; want size %d, content omitted, a true digest or none",
				a.Name, a.Size, a.ContentOmitted, len(a.Content), a.SHA256, size)
		}
	}
	wantOK(t, execCode(t, s, "1"))
}
