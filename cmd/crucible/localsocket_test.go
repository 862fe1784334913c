package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// TestOutcomeFrame checks the last frame the server sends for each kind of
// outcome of the service.
func TestOutcomeFrame(t *testing.T) {
	ok := sandbox.Result{Status: sandbox.StatusOK, Stdout: sandbox.Data("1\n")}
	ie := &sandbox.InputError{Field: "limits.memory_bytes", Rule: "must be at least 1 MiB"}
	tests := []struct {
		name string
		err  error
		want localRunFrame
	}{
		{"ran", nil, localRunFrame{Result: &ok}},
		{"input error", ie, localRunFrame{Result: &ok, InputError: ie}},
		{"platform failure", errors.New("sandbox platform failure: create cgroup: no space"), localRunFrame{Result: &ok, Error: "sandbox platform failure: create cgroup: no space"}},
		{"queue full: run it here", &service.Error{Kind: service.KindBusy, Message: "too many runs are queued; retry later"}, localRunFrame{Refused: "too many runs are queued; retry later"}},
		{"shutting down: run it here", &service.Error{Kind: service.KindUnavailable, Message: "the server is shutting down"}, localRunFrame{Refused: "the server is shutting down"}},
		{"another refusal is reported", &service.Error{Kind: service.KindTooLarge, Message: "too large"}, localRunFrame{Result: &ok, Error: "too large"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := outcomeFrame(ok, tt.err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("outcomeFrame = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestRunOnServe plays servers that answer with scripted frames (or hang
// up) and checks what runOnServe makes of each: the output passed on, the
// result and error, and whether the command must run the program itself.
func TestRunOnServe(t *testing.T) {
	out := func(s sandbox.Stream, d string) localRunFrame {
		return localRunFrame{Output: &localOutput{Stream: s, Data: sandbox.Data(d)}}
	}
	res := sandbox.Result{Status: sandbox.StatusError, ExitCode: 3, Stdout: sandbox.Data("a\n")}
	tests := []struct {
		name       string
		frames     []localRunFrame
		wantOutput string
		wantServed bool
		wantStatus sandbox.Status
		wantErr    string
	}{
		{"refused", []localRunFrame{{Refused: "no runtime"}}, "", false, "", ""},
		{"hung up at once", nil, "", false, "", ""},
		{"ran", []localRunFrame{out(sandbox.StreamStdout, "a\n"), out(sandbox.StreamStderr, "e\n"), {Result: &res}}, "stdout:a\n|stderr:e\n|", true, sandbox.StatusError, ""},
		{"input error", []localRunFrame{{Result: &sandbox.Result{}, InputError: &sandbox.InputError{Field: "code", Rule: "must not be empty"}}}, "", true, "", "invalid request: code: must not be empty"},
		{"platform failure", []localRunFrame{{Result: &sandbox.Result{Status: sandbox.StatusInternal}, Error: "boom"}}, "", true, sandbox.StatusInternal, "boom"},
		{"hung up after output", []localRunFrame{out(sandbox.StreamStdout, "a\n")}, "stdout:a\n|", true, sandbox.StatusInternal, "sandbox platform failure: run on the local crucible serve: EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn := scriptedServe(t, tt.frames)
			var got string
			req := sandbox.Request{Language: sandbox.Python, Code: "print(1)", OnOutput: func(s sandbox.Stream, b []byte) {
				got += string(s) + ":" + string(b) + "|"
			}}
			r, served, err := runOnServe(context.Background(), conn, runtimeKey{}, req)
			if got != tt.wantOutput || served != tt.wantServed || r.Status != tt.wantStatus {
				t.Errorf("output %q, served %v, status %q; want %q, %v, %q", got, served, r.Status, tt.wantOutput, tt.wantServed, tt.wantStatus)
			}
			errText := ""
			if err != nil {
				errText = err.Error()
			}
			if errText != tt.wantErr {
				t.Errorf("error %q, want %q", errText, tt.wantErr)
			}
			if tt.name == "input error" && !sandbox.IsInputError(err) {
				t.Errorf("error %T, want a *sandbox.InputError", err)
			}
		})
	}
}

// scriptedServe listens on a socket, reads one request from the first
// caller, answers it with frames and hangs up; it returns the caller's end.
func scriptedServe(t *testing.T, frames []localRunFrame) *net.UnixConn {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(t.TempDir(), "s"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		var req localRunRequest
		if json.NewDecoder(c).Decode(&req) != nil {
			return
		}
		enc := json.NewEncoder(c)
		for _, f := range frames {
			_ = enc.Encode(f)
		}
	}()
	conn, err := net.DialUnix("unix", nil, ln.Addr().(*net.UnixAddr))
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestDelegable checks which runs `crucible run` may send to a server, and
// the runtime key it asks for.
func TestDelegable(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	small := sandbox.Request{Code: "print(1)"}
	big := sandbox.Request{Code: "print(1)", Files: []sandbox.File{{Name: "big", Content: make(sandbox.Data, maxDelegatedPayload)}}}
	tests := []struct {
		name    string
		flags   runFlags
		env     string // CRUCIBLE_LOCAL
		req     sandbox.Request
		wantKey runtimeKey
		wantOK  bool
	}{
		{"host", runFlags{store: image.DefaultStore}, "", small, runtimeKey{Store: image.DefaultStore}, true},
		{"--image host", runFlags{image: "host", store: image.DefaultStore}, "", small, runtimeKey{Store: image.DefaultStore}, true},
		{"--rootfs and --store, made absolute", runFlags{rootfs: "some/dir", store: "images"}, "", small,
			runtimeKey{RootFS: filepath.Join(wd, "some/dir"), Store: filepath.Join(wd, "images")}, true},
		{"--local", runFlags{local: true}, "", small, runtimeKey{}, false},
		{"CRUCIBLE_LOCAL=1", runFlags{}, "1", small, runtimeKey{}, false},
		{"CRUCIBLE_LOCAL=0", runFlags{store: image.DefaultStore}, "0", small, runtimeKey{Store: image.DefaultStore}, true},
		{"an image not built: the local path reports it", runFlags{image: "no-such-image", store: t.TempDir()}, "", small, runtimeKey{}, false},
		{"--rootfs and --image", runFlags{rootfs: "/", image: "x"}, "", small, runtimeKey{}, false},
		{"a payload too large to copy", runFlags{}, "", big, runtimeKey{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(localEnv, tt.env)
			key, ok := tt.flags.delegable(tt.req)
			if key != tt.wantKey || ok != tt.wantOK {
				t.Errorf("delegable = %+v, %v; want %+v, %v", key, ok, tt.wantKey, tt.wantOK)
			}
		})
	}
}

// TestListenLocal checks what the server does with what it finds at its
// socket's path.
func TestListenLocal(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, path string)
		wantErr string // "" for listening
	}{
		{"nothing there, nor the directory", func(t *testing.T, path string) {}, ""},
		{"a socket nobody listens on (a server died)", func(t *testing.T, path string) {
			mkdirFor(t, path)
			ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
			if err != nil {
				t.Fatal(err)
			}
			ln.SetUnlinkOnClose(false)
			ln.Close()
		}, ""},
		{"a live server's socket", func(t *testing.T, path string) {
			mkdirFor(t, path)
			ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
		}, "another crucible serve listens on"},
		{"a file", func(t *testing.T, path string) {
			mkdirFor(t, path)
			if err := os.WriteFile(path, []byte("mine"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "exists and is not a socket; not replaced"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "run", "serve.sock")
			tt.prepare(t, path)
			ln, err := listenLocal(path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("listenLocal: %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			fi, err := os.Lstat(path)
			if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: %v, %v; want a socket, mode 0600", path, fi.Mode(), err)
			}
			conn := dialServe(path)
			if conn == nil {
				t.Fatal("dialServe found no server")
			}
			conn.Close()
		})
	}
}

// mkdirFor creates the directory of path.
func mkdirFor(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
}
