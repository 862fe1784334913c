package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux/sandboxinit"
	"github.com/crucible-sandbox/crucible/sandbox/procview"
	"github.com/crucible-sandbox/crucible/sandbox/syscallpolicy"
)

// frame is one frame of the exec's multiplexed output stream.
func frame(stream byte, payload string) []byte {
	h := make([]byte, 8, 8+len(payload))
	h[0] = stream
	binary.BigEndian.PutUint32(h[4:], uint32(len(payload)))
	return append(h, payload...)
}

func TestReadOutput(t *testing.T) {
	for _, tc := range []struct {
		name             string
		stream           [][]byte
		limit            int64
		stdout, stderr   string
		outTrunc, limits bool
	}{
		{"both streams", [][]byte{frame(1, "out1 "), frame(2, "err"), frame(1, "out2")}, 100, "out1 out2", "err", false, false},
		{"cut at the limit", [][]byte{frame(1, "12345"), frame(1, "67890"), frame(2, "never")}, 7, "1234567", "", true, true},
		{"exactly the limit", [][]byte{frame(1, "12345")}, 5, "12345", "", false, false},
		{"empty", nil, 10, "", "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c captured
			var streamed bytes.Buffer
			limited := false
			err := readOutput(bytes.NewReader(bytes.Join(tc.stream, nil)), tc.limit,
				func(s sandbox.Stream, b []byte) {
					if s == sandbox.StreamStdout {
						streamed.Write(b)
					}
				}, func() { limited = true }, &c)
			if err != nil {
				t.Fatal(err)
			}
			if c.out.String() != tc.stdout || c.err.String() != tc.stderr || c.outTrunc != tc.outTrunc || limited != tc.limits {
				t.Errorf("stdout %q stderr %q truncated %v limited %v, want %q %q %v %v", c.out.String(), c.err.String(), c.outTrunc, limited, tc.stdout, tc.stderr, tc.outTrunc, tc.limits)
			}
			if streamed.String() != tc.stdout {
				t.Errorf("OnOutput got %q, want the kept stdout %q", streamed.String(), tc.stdout)
			}
		})
	}
	// A frame of an unknown stream is an error, not output.
	var c captured
	if err := readOutput(bytes.NewReader(frame(7, "x")), 10, nil, func() {}, &c); err == nil {
		t.Error("a frame of stream 7 was accepted")
	}
}

func TestSeccompProfile(t *testing.T) {
	s, err := seccompJSON()
	if err != nil {
		t.Fatal(err)
	}
	var p seccompProfile
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		t.Fatal(err)
	}
	action := map[string]string{}
	errno := map[string]uint{}
	for _, r := range p.Syscalls {
		if len(r.Args) > 0 {
			continue
		}
		for _, n := range r.Names {
			action[n] = r.Action
			if r.ErrnoRet != nil {
				errno[n] = *r.ErrnoRet
			}
		}
	}
	for _, n := range syscallpolicy.Allowed() {
		if action[n] != "SCMP_ACT_ALLOW" {
			t.Errorf("%s: %q, want allowed", n, action[n])
		}
	}
	for _, n := range syscallpolicy.Denied() {
		if action[n] != "SCMP_ACT_ERRNO" || errno[n] != 1 {
			t.Errorf("%s: %q errno %d, want EPERM", n, action[n], errno[n])
		}
	}
	for _, n := range append(syscallpolicy.ArgumentChecked(), syscallpolicy.Omitted()...) {
		if action[n] == "SCMP_ACT_ALLOW" {
			t.Errorf("%s is allowed without condition", n)
		}
	}
	// Every call no list names is refused with ENOSYS by a rule of its
	// own (Docker 20.10 ignores defaultErrnoRet); the default is EPERM.
	for _, n := range []string{"clone3", "modify_ldt", "io_setup", "mbind", "set_thread_area"} {
		if action[n] != "SCMP_ACT_ERRNO" || errno[n] != 38 {
			t.Errorf("%s: %q errno %d, want ENOSYS", n, action[n], errno[n])
		}
	}
	if p.DefaultAction != "SCMP_ACT_ERRNO" {
		t.Errorf("default action %s, want SCMP_ACT_ERRNO (EPERM)", p.DefaultAction)
	}
}

func TestFilesArchiveOwners(t *testing.T) {
	b, err := filesArchive([]sandbox.File{
		{Name: "data/in.csv", Content: sandbox.Data("a"), ReadOnly: true},
		{Name: "data/sub/w.txt", Content: sandbox.Data("w")},
		{Name: "run.sh", Content: sandbox.Data("x"), Executable: true},
	}, 1234)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]int64{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name] = [2]int64{int64(h.Uid), h.Mode}
	}
	want := map[string][2]int64{
		"data/":          {0, 0o755},    // holds a read-only file
		"data/sub/":      {1234, 0o755}, // holds none
		"data/in.csv":    {0, 0o444},
		"data/sub/w.txt": {1234, 0o644},
		"run.sh":         {1234, 0o755},
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: uid, mode %v, want %v", name, got[name], w)
		}
	}
}

func TestReadArtifacts(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(h *tar.Header, content string) {
		h.Size = int64(len(content))
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(content))
	}
	add(&tar.Header{Name: "./", Typeflag: tar.TypeDir}, "")
	add(&tar.Header{Name: "./z.txt", Typeflag: tar.TypeReg}, "zz")
	add(&tar.Header{Name: "./in.csv", Typeflag: tar.TypeReg}, "given")
	add(&tar.Header{Name: "./big.bin", Typeflag: tar.TypeReg}, "0123456789")
	add(&tar.Header{Name: "./link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}, "")
	add(&tar.Header{Name: "./a.txt", Typeflag: tar.TypeReg}, "a")
	tw.Close()
	arts, err := readArtifacts(context.Background(), &buf, []sandbox.File{{Name: "in.csv", Content: sandbox.Data("given")}},
		artifactBudget{content: 5, read: 100}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range arts {
		names = append(names, a.Name)
	}
	if !slices.Equal(names, []string{"a.txt", "big.bin", "z.txt"}) {
		t.Fatalf("artifacts %v, want a.txt, big.bin, z.txt (no link, no unchanged input)", names)
	}
	if big := arts[1]; !big.ContentOmitted || big.SHA256 == "" || big.Size != 10 {
		t.Errorf("big.bin %+v, want its digest and size without content (over the 5-byte budget)", big)
	}
	// A file larger than what the host may still read ends the download.
	buf.Reset()
	tw = tar.NewWriter(&buf)
	add(&tar.Header{Name: "./huge", Typeflag: tar.TypeReg}, "0123456789")
	tw.Close()
	arts, err = readArtifacts(context.Background(), &buf, nil, artifactBudget{content: 5, read: 5}, nil)
	if !errors.Is(err, errReadBudget) || len(arts) != 1 || arts[0].SHA256 != "" {
		t.Errorf("over the read budget: %+v, %v; want huge listed unread and errReadBudget", arts, err)
	}
}

// TestKernelViewFiles: the made-up /proc/meminfo is the native sandbox's,
// and /proc/stat has a line per CPU and no host counter.
func TestKernelViewFiles(t *testing.T) {
	for _, m := range []int64{64 << 20, 512 << 20, 3 << 30} {
		if got, want := procview.Meminfo(m), sandboxinit.SyntheticMeminfo(m); got != want {
			t.Errorf("meminfo for %d bytes:\n%s\nwant the native sandbox's\n%s", m, got, want)
		}
	}
	st := procview.Stat(2, "1700000000")
	for _, want := range []string{"cpu  0 0", "\ncpu0 0", "\ncpu1 0", "\nbtime 1700000000\n", "\nprocesses 0\n"} {
		if !strings.Contains(st, want) {
			t.Errorf("stat lacks %q:\n%s", want, st)
		}
	}
	if strings.Contains(st, "cpu2") {
		t.Errorf("stat lists a third CPU:\n%s", st)
	}
}

// TestListRest: the files the archive did not reach are added by name and
// size, unread; those it read (an unchanged input included) are not.
func TestListRest(t *testing.T) {
	found := []sandbox.Artifact{{Name: "b.bin", Size: 9, ContentOmitted: true}}
	seen := map[string]bool{"in.csv": true}
	files := map[string]int64{"a.txt": 1, "b.bin": 9, "in.csv": 5, "d/c.bin": 7}
	got := listRest(found, seen, files)
	var names []string
	for _, a := range got {
		names = append(names, a.Name)
		if a.Name != "b.bin" && (!a.ContentOmitted || a.SHA256 != "" || a.Size != files[a.Name]) {
			t.Errorf("%+v, want size %d, omitted, no digest", a, files[a.Name])
		}
	}
	if !slices.Equal(names, []string{"a.txt", "b.bin", "d/c.bin"}) {
		t.Errorf("artifacts %v, want a.txt, b.bin, d/c.bin", names)
	}
}
