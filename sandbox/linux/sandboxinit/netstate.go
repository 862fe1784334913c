package sandboxinit

import (
	"fmt"
	"os"
	"strings"
)

// Security: the runs of a zygote slot share its network namespace (a
// fork has no privilege to make one of its own, and the host cannot move
// a process into one). What one run does there outlives it: a TCP
// connection it closed stays in TIME_WAIT for a minute, listed in
// /proc/net/tcp; loopback's packet and byte counters, and the
// namespace's protocol counters (/proc/net/snmp, netstat, snmp6), keep
// its traffic. The next run, another tenant's maybe, would read that
// activity, and two runs could signal each other through it. So the
// slot's init compares, at each reset, the namespace's socket tables and
// counters with what they were once the zygote was ready (netState): any
// difference means the run used the network, the reset fails, and the
// host retires the slot, as it does one whose run left a process. Runs
// that do not use the network, nearly all, keep their slot.
//
// The alternative, a network namespace per run, cannot be made where it
// would have to be: only init is privileged, and a process enters a
// namespace only by its own call (unshare, setns), which a fork of the
// zygote, without capabilities and under seccomp, may not make; granting
// it CAP_SYS_ADMIN, or a user namespace to get one, would give every run
// what the sandbox denies. It would also put on every run's path what
// few need: making one and bringing its loopback up took 0.33 ms (p50;
// 0.53 ms p90) of a 15 ms print(1) run here, plus its teardown, which
// the kernel does later in a worker, waiting for RCU grace periods. The
// check costs about 0.2 ms of init's time per reset, off the run's path.

// netFiles are the files of /proc/net, each the reader's network
// namespace's, through which a run could see another's use of it:
// loopback's counters (dev), the protocol counters (snmp, snmp6,
// netstat), and the socket tables that are cheap to read. A socket that
// outlives its process is a unix socket (one whose descriptor is in
// flight in a cycle of unix sockets), or has sent or received a packet
// (a TCP connection in TIME_WAIT): the first is in the unix table, the
// second changed loopback's counters. So the TCP and UDP tables, whose
// reading walks the whole host's hash tables (some 9 ms each for tcp and
// tcp6 here), are not read. (sockstat is left out too: its memory
// figures are the whole host's; and netlink, which lists the kernel's own
// sockets.)
var netFiles = []string{
	"unix", "packet", "raw", "raw6", "icmp", "icmp6",
	"dev", "snmp", "snmp6", "netstat",
}

// netState is the content of netFiles, by name; a file the kernel does
// not have (its protocol not built in) is left out.
type netState map[string]string

// readNetState reads netFiles.
func readNetState() (netState, error) {
	st := netState{}
	for _, name := range netFiles {
		b, err := os.ReadFile("/proc/net/" + name)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read /proc/net/%s: %w", name, err)
		}
		st[name] = string(b)
	}
	return st, nil
}

// changedSince returns an error naming the files of /proc/net that differ
// between was and st, nil if none does.
func (st netState) changedSince(was netState) error {
	var changed []string
	for _, name := range netFiles {
		if st[name] != was[name] {
			changed = append(changed, name)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	return fmt.Errorf("the run used the network namespace, which the next run would see: /proc/net/{%s} changed", strings.Join(changed, ","))
}
