package main

import (
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestWarmDefault: `crucible serve` and `crucible mcp` keep a zygote
// slot per CPU, at most maxDefaultWarm, without --warm, and say so in
// --help.
func TestWarmDefault(t *testing.T) {
	want := min(runtime.NumCPU(), maxDefaultWarm)
	if got := defaultWarm(); got != want || got < 1 {
		t.Errorf("defaultWarm() = %d, want %d (one per CPU, at least 1)", got, want)
	}
	for _, command := range []string{"serve", "mcp"} {
		out, stderr, code := cli{}.run(t, command, "--help")
		line := regexp.MustCompile(`(?m)^\s*--warm int\s.*$`).FindString(out)
		if code != 0 || !strings.Contains(line, "(default "+strconv.Itoa(want)+")") || !strings.Contains(line, "0 for none") {
			t.Errorf("crucible %s --help: exit %d, its --warm line %q; want the default %d shown and --warm 0 explained\n%s", command, code, line, want, stderr)
		}
	}
}

// TestCheckUIDCount: the sandboxes kept ready must fit in uid_count, and
// when they do not the error names uid_count, each flag's value and
// --warm's default.
func TestCheckUIDCount(t *testing.T) {
	for _, tc := range []struct {
		uidCount, warm, warmSessions, prestart, images int
		err                                            string // a part of the error; "" for none
	}{
		{0, 8, 2, 2, 2, ""}, // linux.DefaultUIDCount
		{27, 8, 2, 8, 1, ""},
		{26, 8, 2, 8, 1, "uid_count (26) must exceed the uids of the sandboxes kept ready, (2 × --warm 8 + --warm-sessions 2 + --prestart 8) × 1 images = 26"},
		{10, 2, 0, 2, 2, "lower --warm (its default is " + strconv.Itoa(defaultWarm()) + " here, one per CPU; --warm 0 keeps no zygote slot)"},
		{5, 0, 0, 2, 2, ""},
	} {
		err := checkUIDCount(&serveConfig{UIDCount: tc.uidCount}, &serveFlags{warm: tc.warm, warmSessions: tc.warmSessions, prestart: tc.prestart}, tc.images)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%+v: %v", tc, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%+v: error %v, want one saying %q", tc, err, tc.err)
		}
	}
}

// TestServeUIDCountRefused: a --config whose uid_count cannot hold the
// default zygote slots is refused at start, exit 2, naming --warm.
func TestServeUIDCountRefused(t *testing.T) {
	config := writeTemp(t, "serve.json", `{"uid_count": 3}`)
	_, stderr, code := cli{}.run(t, "serve", "--addr", "127.0.0.1:0", "--socket", "", "--db", t.TempDir()+"/runs.db", "--image", "host", "--prestart", "0", "--config", config)
	if code != 2 || !strings.Contains(stderr, "uid_count (3)") || !strings.Contains(stderr, "--warm 0") {
		t.Errorf("serve with uid_count 3: exit %d, stderr %q; want 2 and an error naming uid_count and --warm", code, stderr)
	}
}

// TestWebUIURL: the web UI's URL is the listener's address, loopback for
// an unspecified one.
func TestWebUIURL(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, "http://127.0.0.1:8080/"},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 8080}, "http://127.0.0.1:8080/"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 9000}, "http://[::1]:9000/"},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 9000}, "http://[::1]:9000/"},
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 443}, "http://192.0.2.7:443/"},
	} {
		if got := webUIURL(tc.addr); got != tc.want {
			t.Errorf("webUIURL(%v) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}

// TestWarmFor: --warm's default keeps no zygote slot in a root
// filesystem without python3, where none could start; a --warm given
// applies whatever the root holds.
func TestWarmFor(t *testing.T) {
	withPython, without := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(withPython, "usr/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("python3.11", filepath.Join(withPython, "usr/bin/python3")); err != nil { // as in an image: a relative link
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		root  string
		warm  int
		given bool
		want  int
	}{
		{withPython, 4, false, 4},
		{without, 4, false, 0},
		{without, 4, true, 4},
		{without, 0, false, 0},
		{withPython, 0, true, 0},
	} {
		f := &serveFlags{warm: tc.warm, warmGiven: tc.given}
		if got := f.warmFor(tc.root, log); got != tc.want {
			t.Errorf("warmFor(%s) with --warm %d (given %v) = %d, want %d", tc.root, tc.warm, tc.given, got, tc.want)
		}
	}
}
