package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// imageCLI runs the crucible command with stdout and stderr on pipes (not
// a terminal); it returns them and the exit code.
func imageCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "CRUCIBLE_TEST_MAIN=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	_ = cmd.Run()
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

// noDocker points the crucible commands t starts at a Docker daemon
// that does not answer: the builds of its test images stay out of Docker
// (TestImportImageRecorded tests the import) and say nothing of it.
func noDocker(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-docker.sock"))
}

// TestImageBuildUpToDate: an image built from the same manifest is not
// built again, and the command says so in one line, without promising "a
// few minutes" of work.
func TestImageBuildUpToDate(t *testing.T) {
	noDocker(t)
	store := t.TempDir()
	manifest := filepath.Join(t.TempDir(), "tiny.json")
	src := []byte(`{"name":"tiny","suite":"bookworm","packages":["bash"]}`)
	if err := os.WriteFile(manifest, src, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := image.ParseManifest(src)
	if err != nil {
		t.Fatal(err)
	}
	img := image.Image{Name: "tiny", RootFS: filepath.Join(store, "tiny", "rootfs"), Digest: "sha256:" + strings.Repeat("ab", 32),
		ManifestDigest: m.Digest(), Manifest: *m, SizeBytes: 2048, Files: 3}
	meta, _ := json.Marshal(img)
	if err := os.MkdirAll(img.RootFS, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(store, "tiny", "image.json"), meta, 0o644); err != nil {
		t.Fatal(err)
	}

	stdout, stderr, code := imageCLI(t, "image", "build", "--store", store, "--manifest", manifest)
	t.Logf("stdout: %q\nstderr: %q", stdout, stderr)
	if code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if stderr != "" {
		t.Errorf("stderr %q, want nothing: no build happens", stderr)
	}
	want := "tiny is up to date (" + img.Digest + ", 2KiB, 3 files, " + img.RootFS + ")\n"
	if stdout != want {
		t.Errorf("stdout %q, want %q", stdout, want)
	}
	// --docker asks for the import, which no daemon answers.
	_, stderr, code = imageCLI(t, "image", "build", "--store", store, "--manifest", manifest, "--docker")
	if code != exitInternal || !strings.Contains(stderr, "--docker: runtime unavailable: no Docker daemon answers") {
		t.Errorf("image build --docker without a daemon: exit %d, stderr %q; want %d naming --docker and the daemon", code, stderr, exitInternal)
	}
}

// fakeDebootstrap puts a debootstrap on PATH that prints fixture, a
// debootstrap output kept in image/testdata (or an absolute path), makes a
// one-file root filesystem and exits with code; it returns the PATH to
// give the command.
func fakeDebootstrap(t *testing.T, fixture string, code int) string {
	t.Helper()
	out := fixture
	if !filepath.IsAbs(out) {
		var err error
		if out, err = filepath.Abs(filepath.Join("..", "..", "image", "testdata", fixture)); err != nil {
			t.Fatal(err)
		}
	}
	bin := t.TempDir()
	script := fmt.Sprintf(`#!/bin/sh
cat %q
eval "rootfs=\${$(($# - 1))}"
mkdir -p "$rootfs/etc" && echo tiny >"$rootfs/etc/hostname"
exit %d
`, out, code)
	if err := os.WriteFile(filepath.Join(bin, "debootstrap"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin + ":" + os.Getenv("PATH")
}

// tinyManifest writes a manifest of one package and returns its path.
func tinyManifest(t *testing.T) string {
	t.Helper()
	manifest := filepath.Join(t.TempDir(), "tiny.json")
	if err := os.WriteFile(manifest, []byte(`{"name":"tiny","suite":"bookworm","packages":["bash"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return manifest
}

// elapsed is the time at the start of a progress line.
var elapsed = regexp.MustCompile(`\[\d+:\d\d\] `)

// TestImageBuildProgressInLog: a build whose stderr is not a terminal (a
// CI log) prints one plain line per stage, from debootstrap's own output,
// and no redraws; stdout says what was built.
func TestImageBuildProgressInLog(t *testing.T) {
	noDocker(t)
	testenv.Root(t) // the build tools run in a mount namespace of their own
	store := t.TempDir()
	cmd := exec.Command(os.Args[0], "image", "build", "--store", store, "--manifest", tinyManifest(t), "--mirror", "http://mirror.invalid/debian")
	cmd.Env = append(os.Environ(), "CRUCIBLE_TEST_MAIN=1", "PATH="+fakeDebootstrap(t, "debootstrap-minbase.txt", 0))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v; stderr: %s", err, stderr.String())
	}
	t.Logf("stdout: %q\nstderr:\n%s", stdout.String(), stderr.String())
	want := `building image "tiny" (a few minutes; --verbose shows the tools' output)
debootstrap
debootstrap: reading the package index
debootstrap: retrieving packages
debootstrap: extracting packages
debootstrap: installing core packages
debootstrap: unpacking packages
debootstrap: configuring packages
debootstrap: unpacking packages
debootstrap: configuring packages
digest: hashing files
store
`
	if got := elapsed.ReplaceAllString(stderr.String(), ""); got != want {
		t.Errorf("stderr (less the elapsed times):\n%s\nwant:\n%s", got, want)
	}
	if !regexp.MustCompile(`^built tiny in \d+s \(sha256:[0-9a-f]{64}, \S+, \d+ files, ` + regexp.QuoteMeta(store) + `/tiny/rootfs\)\n$`).MatchString(stdout.String()) {
		t.Errorf("stdout %q, want the one-line summary of the build", stdout.String())
	}
}

// TestImageBuildProgressOnTerminal: on a terminal, a build shows a status
// line redrawn in place with the stage, debootstrap's package counts and
// the elapsed time, and clears it before the summary.
func TestImageBuildProgressOnTerminal(t *testing.T) {
	noDocker(t)
	testenv.Root(t)
	t.Setenv("PATH", fakeDebootstrap(t, "debootstrap-minbase.txt", 0)) // ttyRun passes the environment on
	screen, code := ttyRun(t, "", "image", "build", "--store", t.TempDir(), "--manifest", tinyManifest(t), "--mirror", "http://mirror.invalid/debian")
	t.Logf("screen: %q", screen)
	if code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	for _, want := range []string{
		"\r\x1b[K[0:00] debootstrap: reading the package index",
		"\r\x1b[K[0:00] debootstrap: retrieving packages 1 (adduser)",
		"\r\x1b[K[0:00] debootstrap: unpacking packages 0/89",
		"\r\x1b[Kbuilt tiny in ",
	} {
		if !strings.Contains(elapsedZero(screen), want) {
			t.Errorf("the terminal did not show %q", want)
		}
	}
}

// elapsedZero writes every elapsed time as [0:00].
func elapsedZero(s string) string { return elapsed.ReplaceAllString(s, "[0:00] ") }

// TestImageBuildFailureSaysWhat: a failed build shows the last lines the
// failing tool printed, not just its exit status.
func TestImageBuildFailureSaysWhat(t *testing.T) {
	noDocker(t)
	testenv.Root(t)
	cmd := exec.Command(os.Args[0], "image", "build", "--store", t.TempDir(), "--manifest", tinyManifest(t), "--mirror", "http://mirror.invalid/debian")
	cmd.Env = append(os.Environ(), "CRUCIBLE_TEST_MAIN=1", "PATH="+fakeDebootstrap(t, "debootstrap-nosuchpkg.txt", 1))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	_ = cmd.Run()
	t.Logf("stderr:\n%s", stderr.String())
	if code := cmd.ProcessState.ExitCode(); code != exitInternal {
		t.Errorf("exit code %d, want %d", code, exitInternal)
	}
	for _, want := range []string{"crucible: image build: debootstrap failed (exit status 1); its last lines:\n", "  E: Couldn't find these debs: nosuchpkg\n"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
}

// TestImageBuildToolOutputOnTerminal: the build tools' output, which
// package scripts and prepare commands write, is inert on a terminal, both
// with --verbose and in the last lines a failed build shows.
func TestImageBuildToolOutputOnTerminal(t *testing.T) {
	noDocker(t)
	testenv.Root(t)
	hostile := filepath.Join(t.TempDir(), "hostile.txt")
	if err := os.WriteFile(hostile, []byte("I: Unpacking \x1b]52;c;cm0=\x07x...\nSetting up \x1b[2J\u202e (1) ...\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		flag string
		code int // the fake debootstrap's and the command's
	}{
		{"--verbose", "-v", 0},
		{"a failure's last lines", "--force", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PATH", fakeDebootstrap(t, hostile, tt.code))
			screen, code := ttyRun(t, "", "image", "build", tt.flag, "--store", t.TempDir(), "--manifest", tinyManifest(t), "--mirror", "http://mirror.invalid/debian")
			t.Logf("screen: %q", screen)
			if want := map[int]int{0: 0, 1: exitInternal}[tt.code]; code != want {
				t.Errorf("exit code %d, want %d", code, want)
			}
			checkInert(t, strings.ReplaceAll(screen, clearLine, "")) // the status line's own redraws
			if !strings.Contains(screen, `I: Unpacking \x1b]52;c;cm0=\x07x...`) {
				t.Errorf("the tool's output is not shown as visible escapes")
			}
		})
	}
}
