package docker

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"

	"github.com/crucible-sandbox/crucible/sandbox/lang"
)

// A pooled container's waiting process is not sleep but agentScript, a
// shell as root (the container's user; it holds no capability) that the
// host talks to over the container's attached stdin and stdout. It does
// for the run what the daemon's archive calls do for a cold one, without
// their cost (each mounts the container's filesystems in a helper process
// of the daemon's: 50 to 90 ms on this host, most of a pooled run):
//
//  1. it reads the program file's name and size, one line each, then that
//     many bytes (see smallCode) into /code, root's and read-only (umask 0222) as the
//     archive upload leaves it, and answers "placed";
//  2. after the program has ended it reads one line and answers whether
//     /work holds anything: "empty" spares the download of the artifacts
//     (the common case); "files" has the host download them as for a cold
//     run, through the archive, which reads every file whatever its mode;
//     and whether a process other than docker-init and itself is left:
//     "alone" lets the host return at once and remove the container in the
//     background; "others" (a program that left a process behind) has the
//     host kill the container and wait for its end before Run returns, as
//     a cold run's removal does, so nothing of a run runs once Run has
//     returned;
//  3. then it sleeps until the container is removed.
//
// The checks fork nothing (globs of bash's own): a program that left
// processes up to the pids limit cannot make them fail.
//
// The program runs in an exec as its own uid: it cannot signal, trace or
// write to this root process, nor read its stdin. What the agent answers
// concerns the program's own run only, and a lie it could not tell anyway.
// The input files, when a request has any, still go through the archive
// upload, which sets their owners (the agent, without CAP_CHOWN, cannot).
const agentScript = `LC_ALL=C
IFS= read -r name || exit 1
IFS= read -r size || exit 1
umask 0222
if [ "$size" -le ` + smallCode + ` ]; then
  IFS= read -r -N "$size" code || [ "$size" -eq 0 ] || exit 1
  printf '%s' "$code" > "` + lang.CodeDir + `/$name" || exit 1
else
  head -c "$size" > "` + lang.CodeDir + `/$name" || exit 1
fi
echo placed
IFS= read -r _ || exit 1
shopt -s nullglob dotglob
entries=(` + lang.WorkDir + `/*)
procs=(/proc/[0-9]*)
work=empty procs=alone
[ ${#entries[@]} -eq 0 ] || work=files
[ ${#procs[@]} -le 2 ] || procs=others
echo "$work $procs"
exec sleep infinity
`

// smallCode is the size up to which the agent reads the program file with
// bash's own read, a byte at a time, which forks nothing (a fork of head
// cost up to 30 ms under gVisor); a larger one is copied by head. A
// program holds no NUL byte (sandbox.Request.Validate), which bash could
// not keep; LC_ALL=C has read count bytes.
const smallCode = "16384"

// agentCmd runs agentScript with bash, which every image has (package lang
// runs Bash programs with it), as head and sleep.
var agentCmd = []string{"/bin/bash", "--noprofile", "--norc", "-c", agentScript}

// agentTimeout bounds each exchange with the agent.
const agentTimeout = 10 * time.Second

// agent is the host's end of a pooled container's waiting process.
type agent struct {
	conn types.HijackedResponse
	out  *bufio.Reader // the demultiplexed stdout and stderr
}

// attachAgent attaches to the waiting process of container id.
func (r *Runtime) attachAgent(ctx context.Context, id string) (*agent, error) {
	conn, err := r.cli.ContainerAttach(ctx, id, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return nil, fmt.Errorf("attach the waiting process: %w", err)
	}
	return &agent{conn: conn, out: bufio.NewReader(&demux{r: conn.Reader})}, nil
}

// placeCode has the agent write code as /code/name.
func (a *agent) placeCode(name, code string) error {
	msg := name + "\n" + strconv.Itoa(len(code)) + "\n" + code
	if err := a.send(msg); err != nil {
		return err
	}
	return a.expect("placed")
}

// afterRun asks the agent, once the program has ended, whether /work
// holds nothing and whether processes of the run are left.
func (a *agent) afterRun() (workEmpty, othersLeft bool, err error) {
	if err := a.send("check\n"); err != nil {
		return false, true, err
	}
	line, err := a.line()
	if err != nil {
		return false, true, err
	}
	work, procs, _ := strings.Cut(line, " ")
	if (work != "empty" && work != "files") || (procs != "alone" && procs != "others") {
		return false, true, fmt.Errorf("the waiting process answered %q, want empty or files, then alone or others", line)
	}
	return work == "empty", procs == "others", nil
}

func (a *agent) send(msg string) error {
	_ = a.conn.Conn.SetWriteDeadline(time.Now().Add(agentTimeout))
	if _, err := io.WriteString(a.conn.Conn, msg); err != nil {
		return fmt.Errorf("write to the waiting process: %w", err)
	}
	return nil
}

func (a *agent) expect(want string) error {
	line, err := a.line()
	if err != nil {
		return err
	}
	if line != want {
		return fmt.Errorf("the waiting process answered %q, want %q", line, want)
	}
	return nil
}

// line reads the agent's next line of output.
func (a *agent) line() (string, error) {
	_ = a.conn.Conn.SetReadDeadline(time.Now().Add(agentTimeout))
	line, err := a.out.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("read from the waiting process (it said %q): %w", line, err)
	}
	return strings.TrimSuffix(line, "\n"), nil
}

// close ends the attachment.
func (a *agent) close() { a.conn.Close() }

// demux reads the payloads of a multiplexed attach stream (see readOutput),
// stdout's and stderr's alike: the agent writes to stderr only when
// something failed, which then shows in the answer.
type demux struct {
	r    io.Reader
	left uint32 // bytes left in the current frame
}

func (d *demux) Read(p []byte) (int, error) {
	for d.left == 0 {
		var hdr [8]byte
		if _, err := io.ReadFull(d.r, hdr[:]); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				err = io.EOF
			}
			return 0, err
		}
		d.left = binary.BigEndian.Uint32(hdr[4:])
	}
	n, err := d.r.Read(p[:min(len(p), int(d.left))])
	d.left -= uint32(n)
	return n, err
}
