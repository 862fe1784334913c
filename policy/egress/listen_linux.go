package egress

import (
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// ListenIn opens a TCP listener on addr (such as "127.0.0.1:0") inside
// the network namespace nsPath names (such as /proc/PID/ns/net). The
// socket belongs to that namespace for good, and this process accepts
// from it: a sandbox whose namespace has nothing but its loopback
// reaches the listener, and nothing else, at 127.0.0.1; every connection
// the proxy then dials is made from this process's own namespace.
//
// Security: the socket is made by an OS thread locked to its goroutine
// that joins the namespace (setns), listens, and joins its own namespace
// again before it is unlocked: no other goroutine ever runs in the
// sandbox's namespace. If it cannot go back, the thread stays locked and
// ends with its goroutine, taken out of service. (It is not ended in any
// case: a sandbox's init is started with Pdeathsig, which the kernel
// sends when the thread that forked it ends, and that may be this one.)
func ListenIn(nsPath, addr string) (net.Listener, error) {
	ns, err := os.Open(nsPath)
	if err != nil {
		return nil, fmt.Errorf("open network namespace: %w", err)
	}
	defer ns.Close()
	type result struct {
		ln  net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		home, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("open this thread's network namespace: %w", err)}
			return
		}
		defer home.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("join network namespace %s: %w", nsPath, err)}
			return
		}
		ln, err := net.Listen("tcp", addr)
		if err := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); err != nil {
			// Locked for good: the thread ends with this goroutine.
			if ln != nil {
				ln.Close()
			}
			ch <- result{err: fmt.Errorf("return to the host's network namespace: %w", err)}
			return
		}
		runtime.UnlockOSThread()
		ch <- result{ln, err}
	}()
	r := <-ch
	return r.ln, r.err
}
