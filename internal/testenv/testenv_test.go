package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB that records a skip or a failure instead of
// reporting it, and stops its goroutine as the real ones do.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Fatal(args ...any) {
	r.failed = fmt.Sprint(args...)
	runtime.Goexit()
}

// check runs need on a recorder, in a goroutine of its own (a skip or a
// failure ends it), and returns the recorder.
func check(need func(testing.TB)) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		need(r)
	}()
	<-done
	return r
}

func TestNeeds(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "humaneval"), 0o755); err != nil {
		t.Fatal(err)
	}
	browser := filepath.Join(dir, "browser")
	if err := os.WriteFile(browser, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	npmDir := filepath.Join(dir, "npm") // a package.json naming a package not installed
	if err := os.MkdirAll(filepath.Join(npmDir, "node_modules", "installed", "node_modules", "dep"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"package.json":                                         `{"dependencies": {"installed": "1.0.0", "absent": "2.0.0"}}`,
		"node_modules/installed/package.json":                  `{"name": "installed", "dependencies": {"dep": "1.0.0"}}`,
		"node_modules/installed/node_modules/dep/package.json": `{"name": "dep"}`,
	} {
		if err := os.WriteFile(filepath.Join(npmDir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	notExecutable := filepath.Join(dir, "text")
	if err := os.WriteFile(notExecutable, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  map[string]string // CI is "" unless set here
		need func(testing.TB)
		// want is part of the skip's message, or, with CI set, of the
		// failure's; "" for a need that is met.
		want string
	}{
		{"a data set there", map[string]string{"CRUCIBLE_DATASETS": dir}, func(tb testing.TB) { Dataset(tb, "humaneval") }, ""},
		{"a data set missing", map[string]string{"CRUCIBLE_DATASETS": dir}, func(tb testing.TB) { Dataset(tb, "dabench/tables") },
			"the data set file or directory " + filepath.Join(dir, "dabench/tables")},
		{"a data set missing, under CI", map[string]string{"CRUCIBLE_DATASETS": dir + "/none", "CI": "true"}, func(tb testing.TB) { Dataset(tb, "humaneval") },
			"the data set file or directory " + filepath.Join(dir, "none/humaneval")},
		{"a browser", map[string]string{"CRUCIBLE_CHROMIUM": browser}, func(tb testing.TB) { Chromium(tb) }, ""},
		{"a browser that is not executable", map[string]string{"CRUCIBLE_CHROMIUM": notExecutable}, func(tb testing.TB) { Chromium(tb) },
			"a browser to drive at " + notExecutable},
		{"no browser, under CI", map[string]string{"CRUCIBLE_CHROMIUM": dir + "/none", "CI": "true"}, func(tb testing.TB) { Chromium(tb) },
			"installs Debian's chromium"},
		{"a NATS server", map[string]string{"CRUCIBLE_NATS_SERVER": browser}, func(tb testing.TB) { NATSServer(tb) }, ""},
		{"no NATS server", map[string]string{"CRUCIBLE_NATS_SERVER": dir + "/none"}, func(tb testing.TB) { NATSServer(tb) },
			"a NATS JetStream server to start at " + dir + "/none"},
		{"no NATS server, under CI", map[string]string{"CRUCIBLE_NATS_SERVER": notExecutable, "CI": "true"}, func(tb testing.TB) { NATSServer(tb) },
			"installs Debian's nats-server"},
		{"an image not built", nil, func(tb testing.TB) { Image(tb, "nosuchimage") }, "the nosuchimage image built in /var/lib/crucible/images/nosuchimage"},
		{"an image not built, under CI", map[string]string{"CI": "true"}, func(tb testing.TB) { Image(tb, "nosuchimage") }, "scripts/setup.sh"},
		{"npm packages not installed", nil, func(tb testing.TB) { npmInstalled(tb, npmDir, "the packages", "npm ci") },
			"the packages in " + npmDir + " (absent is not installed)"},
		{"npm packages not installed, under CI", map[string]string{"CI": "true"}, func(tb testing.TB) { npmInstalled(tb, npmDir, "the packages", "npm ci") },
			"CI is set, so a missing need fails the test instead of skipping it: npm ci"},
		{"npm packages installed", nil, func(tb testing.TB) {
			npmInstalled(tb, filepath.Join(npmDir, "node_modules", "installed"), "the packages", "npm ci")
		}, ""},
		{"any need", nil, func(tb testing.TB) { Missing(tb, "a thing", "make one") }, "skipping: needs a thing (make one)"},
		{"any need, under CI", map[string]string{"CI": "1"}, func(tb testing.TB) { Missing(tb, "a thing", "make one") },
			"needs a thing; CI is set, so a missing need fails the test instead of skipping it: make one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CI", tt.env["CI"])
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			r := check(tt.need)
			ci := tt.env["CI"] != ""
			switch {
			case tt.want == "" && (r.skipped != "" || r.failed != ""):
				t.Errorf("need met, but skipped %q, failed %q", r.skipped, r.failed)
			case tt.want != "" && ci && (r.skipped != "" || !strings.Contains(r.failed, tt.want)):
				t.Errorf("under CI: skipped %q, failed %q; want a failure with %q", r.skipped, r.failed, tt.want)
			case tt.want != "" && !ci && (r.failed != "" || !strings.Contains(r.skipped, tt.want)):
				t.Errorf("skipped %q, failed %q; want a skip with %q", r.skipped, r.failed, tt.want)
			}
		})
	}
}

func TestRepoRoot(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if filepath.Join(root, "internal", "testenv") != wd {
		t.Errorf("RepoRoot %s, run from %s", root, wd)
	}
}
