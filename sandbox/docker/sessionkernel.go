package docker

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/crucible-sandbox/crucible/kernel"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/lang"
)

// muxSource is the multiplexer that runs the kernel in a session's
// container and carries its four channels over the exec's stream.
//
//go:embed sessionmux.py
var muxSource string

// muxPath is where a session's container holds it, beside the kernel
// (kernel.PythonPath) in /code, which is root's and read-only to the
// sandbox's user.
const muxPath = lang.CodeDir + "/mux.py"

// maxMuxFrame bounds one frame of the multiplexer: it sends at most 64 KiB
// at once; a larger frame is not its.
const maxMuxFrame = 1 << 20

// maxMuxStderr bounds what is kept of the multiplexer's own stderr (its
// traceback, if it fails), for the reason of a session that broke.
const maxMuxStderr = 4 << 10

// kernelLife is one kernel of a session, from its start to its exit: the
// exec running the multiplexer and the kernel, and what is read from it.
type kernelLife struct {
	conn    types.HijackedResponse
	ctl     chan []byte       // lines for the multiplexer's stdin, in order
	replies chan kernel.Reply // the kernel's replies, closed when its channel breaks
	err     error             // why replies closed; read once it is
	out     *cellOutput       // the session's, shared by its kernels
	exited  chan struct{}     // closed when the exec's stream has ended
	gone    chan struct{}     // closed by stop: nothing reads replies any more
	stopped sync.Once
	// status is the kernel's wait status, as the multiplexer reported it
	// (hasStatus); broken says why the stream was not the multiplexer's.
	// Both are read once exited is closed.
	status    int
	hasStatus bool
	broken    string
	muxErr    bytes.Buffer
	// workDigest is the multiplexer's digest of /work sent with the last
	// reply ("": none, or /work could not be read whole).
	workDigest atomic.Pointer[string]
}

// digest returns the last digest of /work the multiplexer sent.
func (l *kernelLife) digest() string {
	if d := l.workDigest.Load(); d != nil {
		return *d
	}
	return ""
}

// startKernel starts the multiplexer and the kernel in the session's
// container, as the sandbox's user with exactly the language's
// environment (env -i), and waits for the kernel's greeting.
func (s *Session) startKernel(ctx context.Context) (*kernelLife, error) {
	py := lang.For(sandbox.Python).Interpreter
	argv := append([]string{"/usr/bin/env", "-i"}, lang.Environ(sandbox.Python, s.rt.env, s.env)...)
	argv = append(argv, py, muxPath, py, kernel.PythonPath)
	setup, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	ex, err := s.rt.cli.ContainerExecCreate(setup, s.cid, container.ExecOptions{
		User: strconv.Itoa(s.uid) + ":" + strconv.Itoa(s.uid), AttachStdin: true, AttachStdout: true, AttachStderr: true,
		WorkingDir: lang.WorkDir, Cmd: argv,
	})
	if err != nil {
		return nil, &sandbox.PlatformError{Op: "create the kernel's exec", Err: err}
	}
	// Not bound to ctx: the kernel outlives the call that started it.
	conn, err := s.rt.cli.ContainerExecAttach(context.WithoutCancel(setup), ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return nil, &sandbox.PlatformError{Op: "start the kernel", Err: err}
	}
	l := &kernelLife{conn: conn, ctl: make(chan []byte, 4), replies: make(chan kernel.Reply, 1), out: s.out,
		exited: make(chan struct{}), gone: make(chan struct{})}
	ready := make(chan kernel.Ready, 1)
	go l.read(ready)
	go l.write()
	select {
	case hello, ok := <-ready:
		if !ok || !hello.Ready {
			l.stop()
			<-l.exited
			return nil, &sandbox.PlatformError{Op: "start the kernel", Err: fmt.Errorf("the kernel exited before it was ready (%s)", l.why())}
		}
	case <-setup.Done():
		l.stop()
		return nil, &sandbox.PlatformError{Op: "start the kernel", Err: fmt.Errorf("the kernel did not start within %s", setupTimeout)}
	}
	return l, nil
}

// why says how the kernel's stream ended, for a reason.
func (l *kernelLife) why() string {
	switch {
	case l.broken != "":
		return l.broken
	case l.hasStatus:
		return "wait status " + strconv.Itoa(l.status)
	case l.muxErr.Len() > 0:
		return "the multiplexer said: " + l.muxErr.String()
	}
	return "its stream ended"
}

// request queues a cell's request for the multiplexer, unless the life
// has ended.
func (l *kernelLife) request(line []byte) {
	select {
	case l.ctl <- line:
	case <-l.gone:
	case <-l.exited:
	}
}

// interrupt asks the multiplexer to send the kernel SIGINT. It never
// blocks: it is called from the output's reader, and a full queue holds
// an interrupt already.
func (l *kernelLife) interrupt() {
	select {
	case l.ctl <- []byte("!interrupt\n"):
	default:
	}
}

// write writes the queued lines to the exec's stdin until stop.
func (l *kernelLife) write() {
	for {
		select {
		case line := <-l.ctl:
			if _, err := l.conn.Conn.Write(line); err != nil {
				return
			}
		case <-l.gone:
			return
		case <-l.exited:
			return
		}
	}
}

// stop ends the life from this side: the stream is closed (the
// multiplexer, at the end of its stdin, kills the kernel), and nothing
// waits on its replies any more.
func (l *kernelLife) stop() {
	l.stopped.Do(func() {
		close(l.gone)
		l.conn.Close()
	})
}

// read takes the exec's stream apart: the multiplexer's frames from its
// stdout (output to the session's cellOutput, the reply channel's bytes
// to kernel.ReadChannel, the exit), its stderr kept for a reason, until
// the stream ends or is not the multiplexer's.
func (l *kernelLife) read(ready chan kernel.Ready) {
	defer close(l.exited)
	muxOut, muxOutW := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(muxOutW, &cappedWriter{buf: &l.muxErr, max: maxMuxStderr}, l.conn.Reader)
		muxOutW.CloseWithError(err)
	}()
	channel, channelW := io.Pipe()
	raw := make(chan kernel.Reply)
	go func() {
		err := kernel.ReadChannel(channel, ready, raw)
		channel.CloseWithError(err) // a broken channel takes no more bytes
		l.err = err
		close(raw)
	}()
	go l.forward(raw)
	defer channelW.Close()
	var hdr [5]byte
	buf := make([]byte, 64<<10)
	for {
		if _, err := io.ReadFull(muxOut, hdr[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(hdr[1:])
		if n > maxMuxFrame {
			l.broken = fmt.Sprintf("a frame of %d bytes on the kernel's stream, more than the multiplexer sends", n)
			l.stop()
			return
		}
		if int(n) > len(buf) {
			buf = make([]byte, n)
		}
		payload := buf[:n]
		if _, err := io.ReadFull(muxOut, payload); err != nil {
			return
		}
		switch hdr[0] {
		case 'o':
			l.out.add(0, payload)
		case 'e':
			l.out.add(1, payload)
		case 'r':
			// An error is a broken channel: its reader has said why.
			_, _ = channelW.Write(payload)
		case 'w':
			d := string(payload)
			l.workDigest.Store(&d)
		case 'x':
			if st, err := strconv.Atoi(string(payload)); err == nil {
				l.status, l.hasStatus = st, true
			}
		default:
			l.broken = fmt.Sprintf("a frame of unknown kind %q on the kernel's stream", hdr[0])
			l.stop()
			return
		}
	}
}

// forward hands the replies on to the running cell, until the channel
// breaks or the life is stopped (then the rest are read and dropped, so
// that the reader never waits).
func (l *kernelLife) forward(raw <-chan kernel.Reply) {
	defer close(l.replies)
	for r := range raw {
		select {
		case l.replies <- r:
		case <-l.gone:
			for range raw {
			}
			return
		}
	}
}

// exitSignal is the signal a wait status says ended the kernel (0: it
// exited), and its exit code.
func (l *kernelLife) exitSignal() (sig int, code int) {
	ws := l.status
	if ws&0x7f != 0 {
		return ws & 0x7f, -1
	}
	return 0, (ws >> 8) & 0xff
}

// cappedWriter keeps the first max bytes written to it.
type cappedWriter struct {
	buf *bytes.Buffer
	max int
}

func (w *cappedWriter) Write(p []byte) (int, error) {
	if room := w.max - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
