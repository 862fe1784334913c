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
// The alternative, a network namespace per run, would put its making
// (unshare and bringing loopback up, about a millisecond) on every run's
// path, and it cannot be made where it would have to be: only init is
// privileged, and a namespace joins a process only by the process's own
// call (setns), which a fork, without capabilities, may not make;
// granting it the capability, or a user namespace to get one, would give
// every run what the sandbox denies.

// netFiles are the files of /proc/net, each the reader's network
// namespace's, through which a run could see another's use of it: the
// socket tables and the interface and protocol counters. (sockstat is
// left out: its memory figures are the whole host's; netlink lists the
// kernel's own sockets, which come and go with no run's traffic.)
var netFiles = []string{
	"tcp", "tcp6", "udp", "udp6", "udplite", "udplite6", "raw", "raw6",
	"icmp", "icmp6", "unix", "packet",
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
