package sandboxtest

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
)

// hostReadSlack is what the suite's own host checks (a scan of every
// process's /proc entries, the mount table, the cgroups) may add to the
// owner's read count during one checked run, when the owner is the test
// process itself.
const hostReadSlack = 16 * sandbox.MiB

// readChars returns the bytes process pid has read so far, by any read
// call, from /proc/<pid>/io's rchar: it counts reads of tmpfs files, which
// never reach a disk (read_bytes would not see them).
func readChars(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "rchar: "); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("no rchar in /proc/%d/io", pid)
}

// testSparseArtifacts: a 13 ms program that leaves 200 files of 64 MiB
// each, all holes (ftruncate), must not make the host read 12.8 GiB to
// hash them. The host may read at most the run's artifact and disk
// budgets (data actually written cannot exceed the disk), every file is
// still listed, over the artifact budget with its content omitted, and a
// digest, when one is given, is the true digest of the file.
func testSparseArtifacts(t *testing.T, s *suite) {
	const files, size = 200, 64 * sandbox.MiB
	tok := newToken()
	code := program(`import os
for i in range({{N}}):
    with open("sparse-%03d.bin" % i, "wb") as f:
        f.truncate({{SIZE}})
`, map[string]string{"N": strconv.Itoa(files), "SIZE": strconv.FormatInt(size, 10)})
	zeros := sha256.New()
	chunk := make([]byte, sandbox.MiB)
	for range size / sandbox.MiB {
		zeros.Write(chunk)
	}
	zerosSum := hex.EncodeToString(zeros.Sum(nil))
	lim := sandbox.Limits{}.WithDefaults()

	before, err := readChars(s.owner)
	if err != nil {
		t.Fatalf("the host's read count of the runtime's process: %v", err)
	}
	res, _ := s.run(t, sandbox.Request{Language: sandbox.Python, Code: code}, watch{token: tok})
	after, err := readChars(s.owner)
	if err != nil {
		t.Fatal(err)
	}
	wantExit(t, res, sandbox.StatusOK, 0)
	read, bound := after-before, lim.ArtifactBytes+lim.DiskBytes+hostReadSlack
	t.Logf("the runtime's process read %d bytes (bound %d) for %d sparse files of %d bytes", read, bound, files, size)
	if read > bound {
		t.Errorf("the host read %d bytes to collect %d sparse files holding no data, over the bound of %d (artifact budget + disk + %d for the suite's checks)",
			read, files, bound, hostReadSlack)
	}
	if len(res.Artifacts) != files {
		t.Errorf("%d artifacts, want all %d sparse files listed", len(res.Artifacts), files)
	}
	var content int64
	for _, a := range res.Artifacts {
		content += int64(len(a.Content))
		if a.Size != size || (a.SHA256 != "" && a.SHA256 != zerosSum) {
			t.Errorf("artifact %s: size %d, sha256 %q; want size %d and the digest of %d zero bytes or none", a.Name, a.Size, a.SHA256, size, size)
		}
		if !a.ContentOmitted || len(a.Content) != 0 {
			t.Errorf("artifact %s of %d bytes over the %d-byte budget: omitted=%v, %d bytes of content", a.Name, size, lim.ArtifactBytes, a.ContentOmitted, len(a.Content))
		}
	}
	if content > lim.ArtifactBytes {
		t.Errorf("artifacts carry %d bytes of content, over the budget of %d", content, lim.ArtifactBytes)
	}
}

// testSpecialFileArtifacts: FIFOs and a listening socket the program
// leaves in the working directory, in a subdirectory of it and in /tmp
// never block or fail the run and are not artifacts; the regular file
// beside them is.
func testSpecialFileArtifacts(t *testing.T, s *suite) {
	tok := newToken()
	code := `import os, socket
os.makedirs("sub/deeper")
os.mkfifo("data.csv")
os.mkfifo("sub/deeper/pipe")
os.mkfifo("/tmp/pipe")
for path in ("sock", "sub/sock", "/tmp/sock"):
    socket.socket(socket.AF_UNIX).bind(path)
open("sub/result.txt", "w").write("done")
`
	res, _ := s.run(t, sandbox.Request{Language: sandbox.Python, Code: code}, watch{token: tok})
	wantExit(t, res, sandbox.StatusOK, 0)
	var names []string
	for _, a := range res.Artifacts {
		names = append(names, a.Name)
	}
	if len(res.Artifacts) != 1 || res.Artifacts[0].Name != "sub/result.txt" || string(res.Artifacts[0].Content) != "done" {
		t.Errorf("artifacts %v, want only sub/result.txt holding \"done\"", names)
	}
}
