package sandboxinit

import (
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
)

// socketBufferSysctls lower, in the sandbox's own network namespace, the
// largest buffers TCP grows a connection's queues to (the host may allow
// 32 MiB each way). They are a second wall behind the memory cgroup, which
// charges socket buffers (see socketMemoryFor on the host side): a
// connection whose peer never reads holds at most its two maxima, and the
// loopback traffic a program has with itself needs no more. The settings
// that are still global on current kernels (net.core.rmem_max and
// wmem_max, which SO_RCVBUF and SO_SNDBUF may reach; udp_mem; tcp_mem) are
// read-only from inside a network namespace and left alone.
var socketBufferSysctls = []struct{ file, value string }{
	{"net/ipv4/tcp_rmem", "4096 131072 2097152"},
	{"net/ipv4/tcp_wmem", "4096 16384 2097152"},
}

// netnsSysctlsSince is the first kernel whose tcp_rmem and tcp_wmem belong
// to a network namespace (4.15). On older kernels they are the host's own,
// and writing them from a sandbox would change every connection's.
var netnsSysctlsSince = [2]int{4, 15}

// limitSocketBuffers writes socketBufferSysctls through the /proc mounted
// at proc, which init reaches from inside the sandbox's network namespace.
func limitSocketBuffers(proc string) error {
	if !kernelAtLeast(kernelRelease(), netnsSysctlsSince) {
		return nil
	}
	for _, s := range socketBufferSysctls {
		if err := os.WriteFile(path.Join(proc, "sys", s.file), []byte(s.value), 0); err != nil {
			return fmt.Errorf("sysctl %s: %w", strings.ReplaceAll(s.file, "/", "."), err)
		}
	}
	return nil
}

// kernelRelease returns uname's release, such as "6.1.0-13-amd64".
func kernelRelease() string {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return ""
	}
	var b strings.Builder
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	return b.String()
}

// kernelAtLeast reports whether release is version want or later; an
// unparsable release is not.
func kernelAtLeast(release string, want [2]int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(leadingDigits(parts[1])) // "15-rc1", "19+"
	if err1 != nil || err2 != nil {
		return false
	}
	return major > want[0] || major == want[0] && minor >= want[1]
}

func leadingDigits(s string) string {
	if i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		return s[:i]
	}
	return s
}
