package sandboxtest

import (
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Nothing of one run may reach the next: a runtime that keeps sandboxes
// (a pool of containers, a warm interpreter, a zygote's slot) must hand
// each run a clean one, and one that builds a sandbox per run must not
// share any writable place between them.

// persistPlant leaves, named after its token, files in /work, /tmp,
// /dev/shm (where writable) and /home/user (a link to /work, where a
// runtime might have made a place of its own) and a background process in a session of its
// own, which outlives the program unless the runtime ends it.
const persistPlant = `import os, subprocess, time
TOKEN = "{{TOKEN}}"
for d in ("/work", "/tmp", "/dev/shm", "/home/user"):
    try:
        open(os.path.join(d, TOKEN), "w").write(TOKEN)
        os.mkdir(os.path.join(d, TOKEN + ".d"))
    except OSError:
        pass
subprocess.Popen([TOKEN, "1000"], executable="/bin/sleep", start_new_session=True)
time.sleep(0.3)
print("planted")
`

// persistCheck reports, as JSON, what of a planted token it finds: names
// in /work, /tmp, /dev/shm and /home/user, and processes whose command line holds it.
const persistCheck = `import json, os
TOKEN = "{{PLANTED}}"
found = []
for d in ("/work", "/tmp", "/dev/shm", "/home/user"):
    try:
        found += [os.path.join(d, n) for n in os.listdir(d) if TOKEN in n]
    except OSError:
        pass
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            if TOKEN.encode() in open("/proc/%s/cmdline" % pid, "rb").read():
                found.append("process " + pid)
        except OSError:
            pass
print(json.dumps(found))
`

// testNothingPersists: run A plants files and a background process (seen
// on the host while A runs, gone when A returns: the host check); the two
// runs after it (the second may come from a sandbox a pool made after A)
// find none of it.
func testNothingPersists(t *testing.T, s *suite) {
	planted := newToken()
	res, _ := s.run(t, sandbox.Request{Language: sandbox.Python, Code: program(persistPlant, map[string]string{"TOKEN": planted})},
		watch{token: planted, expectSeen: true})
	wantExit(t, res, sandbox.StatusOK, 0)
	for i := range 2 {
		res, _ := s.run(t, sandbox.Request{Language: sandbox.Python, Code: program(persistCheck, map[string]string{"PLANTED": planted})},
			watch{token: newToken()})
		wantExit(t, res, sandbox.StatusOK, 0)
		var found []string
		decodeReport(t, res, &found)
		if len(found) > 0 {
			t.Errorf("run B%d finds what run A left: %v", i+1, found)
		}
	}
}
