package syscallpolicy

// ArgumentChecked returns the calls allowed only with some arguments: clone
// without NamespaceCloneFlags, personality with one of PersonalityValues,
// socket as SocketRules say and socketpair in SocketpairFamilies. With other
// arguments, clone and personality fail with EPERM and socket and
// socketpair with EAFNOSUPPORT (EPROTONOSUPPORT for a netlink protocol).
func ArgumentChecked() []string {
	return []string{"clone", "personality", "socket", "socketpair"}
}

// NamespaceCloneFlags are the clone(2) flags that create namespaces. clone
// with any of them fails with EPERM, so fork and threads work but no new
// namespace (above all a user namespace) can be made. clone3, whose flags
// live in memory a filter cannot read, fails with ENOSYS like any unlisted
// call, and C libraries fall back to clone.
const NamespaceCloneFlags = cloneNewNS | cloneNewUTS | cloneNewIPC |
	cloneNewUser | cloneNewPID | cloneNewNet | cloneNewCgroup

// PersonalityValues are the personality(2) arguments allowed, as in
// Docker's profile: the Linux personalities with and without 32-bit
// addresses and the 2.6 uname, and 0xffffffff, which only reads the
// current one. Others (ADDR_NO_RANDOMIZE above all, which turns off address
// randomisation for the programs the caller starts) fail with EPERM.
func PersonalityValues() []uint64 {
	return []uint64{perLinux, perLinux32, uname26, uname26 | perLinux32, 0xffffffff}
}

// Personalities of <linux/personality.h>, which package unix lacks.
const (
	perLinux   = 0x0000
	perLinux32 = 0x0008
	uname26    = 0x0020000
)

// SocketRule allows socket(2) in one address family.
type SocketRule struct {
	// Family is the address family (domain), Linux's number, e.g. 2 for
	// AF_INET.
	Family int
	// Protocols, if not nil, are the only protocols allowed in the family.
	Protocols []int
}

// SocketRules returns the address families a sandboxed program may open
// sockets in. Security: address families are a large part of the kernel a
// program can reach, and not all of them are isolated by the sandbox's
// network namespace: AF_VSOCK's ports are global to the machine and lead
// to the hypervisor. So only the families programs need are allowed: Unix
// sockets, IPv4 and IPv6 (the namespace has only a loopback interface),
// and netlink for NETLINK_ROUTE alone, which glibc and libuv use to list
// interfaces and addresses (getaddrinfo, if_nameindex, getifaddrs). Every
// other family (AF_VSOCK, AF_PACKET, AF_ALG, AF_KEY, AF_XDP, AF_TIPC,
// AF_RDS, AF_BLUETOOTH, ...) fails with EAFNOSUPPORT, as on a kernel built
// without it. The socket type is not restricted: SOCK_RAW needs
// CAP_NET_RAW, which the program does not have.
func SocketRules() []SocketRule {
	return []SocketRule{
		{Family: afUnix},
		{Family: afInet},
		{Family: afInet6},
		{Family: afNetlink, Protocols: []int{netlinkRoute}},
	}
}

// SocketpairFamilies returns the address families socketpair(2) is
// allowed in: only Unix sockets make pairs that programs use.
func SocketpairFamilies() []int { return []int{afUnix} }
