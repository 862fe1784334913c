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
// Security: the socket is made by an OS thread that joins the namespace
// (setns) and is never given back to the Go scheduler: its goroutine
// ends locked, so the runtime ends the thread with it, and no other
// goroutine ever runs in the sandbox's namespace. Go starts new threads
// from a template thread, not from a locked one, so no thread inherits
// the namespace.
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
		runtime.LockOSThread() // never unlocked: see above
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("join network namespace %s: %w", nsPath, err)}
			return
		}
		ln, err := net.Listen("tcp", addr)
		ch <- result{ln, err}
	}()
	r := <-ch
	return r.ln, r.err
}
