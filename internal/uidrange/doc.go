// Package uidrange hands out the host uids sandboxes run as, one uid to
// each live sandbox, for every runtime (native, docker, gvisor).
//
// Security: the kernel keeps several quotas per user, not per process or
// cgroup: inotify instances and watches, pending signals (RLIMIT_SIGPENDING,
// which POSIX timers draw on too), POSIX message-queue bytes, pipe pages,
// epoll watches, processes (RLIMIT_NPROC). Had two live sandboxes the same
// uid, one tenant's program could take a quota whole and make another's
// inotify_init, timer_create, mq_open or fork fail, and the shared counts
// (SigQ in /proc/self/status) would be a channel between them. Containers
// do not change that: runc's containers run on the host's kernel, and a
// uid's quotas are the kernel's, whatever namespaces hold its processes.
//
// On Linux every Allocator on the host, in this process or another, shares
// one view of the uids in use through byte locks on one file (HostLockPath):
// two runtimes of one server, two servers, a `crucible run` beside a
// `crucible serve`. Elsewhere (macOS, Windows, where the daemon's kernel is
// in a virtual machine of its own) an Allocator is alone in its process.
package uidrange
