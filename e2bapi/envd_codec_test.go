package e2bapi

import (
	"strings"
	"testing"
	"time"
)

// TestEnvdCodec checks the JSON of the messages against protobuf's JSON
// mapping, as E2B's SDK (protobuf-es) reads and writes it.
func TestEnvdCodec(t *testing.T) {
	mod := time.Date(2026, 11, 27, 10, 0, 0, 500, time.UTC)
	marshal := []struct {
		name string
		msg  any
		want string
	}{
		{"start event", &startResponse{Event: processEvent{Start: &startEvent{Pid: 7}}}, `{"event":{"start":{"pid":7}}}`},
		{"stdout as base64", &startResponse{Event: processEvent{Data: &dataEvent{Stdout: []byte("hi\n")}}}, `{"event":{"data":{"stdout":"aGkK"}}}`},
		{"stderr as base64", &startResponse{Event: processEvent{Data: &dataEvent{Stderr: []byte{0xff}}}}, `{"event":{"data":{"stderr":"/w=="}}}`},
		{"end", &startResponse{Event: processEvent{End: &endEvent{ExitCode: 3, Exited: true, Status: "exit status 3", Error: envdPtr("exit status 3")}}},
			`{"event":{"end":{"exitCode":3,"exited":true,"status":"exit status 3","error":"exit status 3"}}}`},
		{"keepalive", &connectResponse{Event: processEvent{Keepalive: &struct{}{}}}, `{"event":{"keepalive":{}}}`},
		{"entry: int64 size as a string, enum by name, RFC 3339 time", &statResponse{Entry: &envdEntry{Name: "a.csv", Type: envdFileTypeFile, Path: "/home/user/a.csv", Size: 1 << 40, ModifiedTime: &mod}},
			`{"entry":{"name":"a.csv","type":"FILE_TYPE_FILE","path":"/home/user/a.csv","size":"1099511627776","modifiedTime":"2026-11-27T10:00:00.0000005Z"}}`},
		{"process list", &processListResponse{Processes: []processInfo{{Config: processConfig{Cmd: "/bin/bash", Args: []string{"-c", "x"}, Cwd: envdPtr("/tmp")}, Pid: 2, Tag: envdPtr("t")}}},
			`{"processes":[{"config":{"cmd":"/bin/bash","args":["-c","x"],"cwd":"/tmp"},"pid":2,"tag":"t"}]}`},
		{"signal by name", &sendSignalRequest{Signal: signalSIGKILL}, `{"process":null,"signal":"SIGNAL_SIGKILL"}`},
	}
	for _, c := range marshal {
		b, err := envdCodec{}.Marshal(c.msg)
		if err != nil || string(b) != c.want {
			t.Errorf("%s: %s, %v; want %s", c.name, b, err, c.want)
		}
	}
	// What the SDK sends: enums by name (or number), uint32 as a number
	// (or a string), fields the messages do not know.
	var sig sendSignalRequest
	if err := (envdCodec{}).Unmarshal([]byte(`{"process":{"pid":12},"signal":"SIGNAL_SIGTERM","future":1}`), &sig); err != nil ||
		sig.Signal != signalSIGTERM || sig.Process == nil || *sig.Process.Pid != 12 {
		t.Errorf("signal request: %+v, %v", sig, err)
	}
	var byNumber sendSignalRequest
	if err := (envdCodec{}).Unmarshal([]byte(`{"process":{"pid":"13"},"signal":9}`), &byNumber); err != nil ||
		byNumber.Signal != signalSIGKILL || *byNumber.Process.Pid != 13 {
		t.Errorf("signal by number: %+v, %v", byNumber, err)
	}
	var start startRequest
	if err := (envdCodec{}).Unmarshal([]byte(`{"process":{"cmd":"/bin/bash","args":["-l","-c","echo"],"envs":{"A":"1"},"cwd":"/home/user"},"stdin":false}`), &start); err != nil ||
		start.Process.Cmd != "/bin/bash" || start.Process.Envs["A"] != "1" || *start.Process.Cwd != "/home/user" || *start.Stdin {
		t.Errorf("start request: %+v, %v", start, err)
	}
	var empty processListRequest
	if err := (envdCodec{}).Unmarshal(nil, &empty); err != nil {
		t.Errorf("empty body: %v", err)
	}
	bad := []struct{ name, in, want string }{
		{"unknown signal", `{"signal":"SIGNAL_SIGHUP"}`, "signal: must be SIGNAL_SIGKILL or SIGNAL_SIGTERM"},
		{"pid not a number", `{"process":{"pid":"x"},"signal":9}`, "must be a 32-bit unsigned integer"},
		{"cmd not a string", `{"process":{"cmd":3}}`, "process.cmd: must be a JSON string"},
	}
	for _, c := range bad {
		var m sendSignalRequest
		var s startRequest
		err := (envdCodec{}).Unmarshal([]byte(c.in), &m)
		if c.name == "cmd not a string" {
			err = (envdCodec{}).Unmarshal([]byte(c.in), &s)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// TestWorkPath maps E2B paths to the working directory and refuses the
// others with an error naming the field.
func TestWorkPath(t *testing.T) {
	cases := []struct{ in, want, err string }{
		{"/home/user", ".", ""},
		{"/home/user/", ".", ""},
		{"/home/user/a/b.txt", "a/b.txt", ""},
		{"a/b.txt", "a/b.txt", ""},
		{"", ".", ""},
		{"./a/../b", "b", ""},
		{"/home/user/a/../../user/c", "c", ""},
		{"/etc/passwd", "", `path: must be under /home/user (the sandbox's working directory) or relative to it, got "/etc/passwd"`},
		{"/home/username", "", "must be under /home/user"},
		{"../x", "", "must be under /home/user"},
		{"/home/user/../../etc", "", "must be under /home/user"},
		{"/work/a", "", "must be under /home/user"},
		{"a\x00b", "", "path: must not contain a NUL byte"},
	}
	for _, c := range cases {
		got, err := envdWorkPath("path", c.in)
		if c.err == "" && (err != nil || got != c.want) {
			t.Errorf("envdWorkPath(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
		if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("envdWorkPath(%q) = %q, %v; want an error saying %q", c.in, got, err, c.err)
		}
	}
}
