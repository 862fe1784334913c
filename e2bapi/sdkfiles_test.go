package e2bapi_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestSDKFiles: through E2B's official SDK (files.mjs), files written
// under /home/user (text as multipart, bytes as octet-stream, several at
// once, relative paths) are read back as written and are the session's
// files; a missing file is not found; paths outside /home/user are
// refused naming path; a killed sandbox's files are gone.
func TestSDKFiles(t *testing.T) {
	ts := newTestServer(t, nil)
	var got struct {
		Written                 struct{ Path, Name, Type string }
		Text, Relative          string
		RelativeRead            string
		BytesEqual, Running     bool
		Many                    []struct{ Path, Name string }
		Missing, Outside        thrown
		Escape, List, AfterKill thrown
		DirRead                 thrown
	}
	runSDK(t, ts, "files.mjs", ts.newKey("acme"), &got)
	checks := []struct {
		ok   bool
		what string
	}{
		{got.Written.Path == "/home/user/notes/a.txt" && got.Written.Name == "a.txt" && got.Written.Type == "file", "write answers the file's entry"},
		{got.Text == "hello\n" && got.RelativeRead == "hello\n", "read gives the text back, by an absolute and a relative path"},
		{got.BytesEqual, "bytes written as octet-stream are read back equal"},
		{len(got.Many) == 2 && got.Many[0].Path == "/home/user/x/1.txt" && got.Many[1].Path == "/home/user/x/2.txt" && got.Relative == "two", "several files at once"},
		{got.Missing.Name == "FileNotFoundError" || got.Missing.Name == "NotFoundError", "a missing file: not found"},
		{got.Outside.Name == "InvalidArgumentError" && strings.Contains(got.Outside.Message, "path") && strings.Contains(got.Outside.Message, "/home/user"), "/etc/passwd: refused naming path"},
		{got.Escape.Name == "InvalidArgumentError" && strings.Contains(got.Escape.Message, ".."), "../..: refused"},
		{got.DirRead.Name == "InvalidArgumentError" && strings.Contains(got.DirRead.Message, "path: ") && strings.Contains(got.DirRead.Message, "directory"), "reading a directory: refused naming path"},
		{got.List.Name == "" && strings.Contains(fmt.Sprint(got.List.Returned), "notes"), "files.list lists the files written"},
		{got.Running, "isRunning (GET /health)"},
		{got.AfterKill.Name == "TimeoutError", "read after kill: the sandbox is gone (502)"},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: no; the script saw %+v", c.what, got)
		}
	}
	ts.waitSessionsClosed("acme")
}
