// Package egress is the host side of a run's network allowlist: a proxy
// that a sandbox reaches on its own loopback (the runtime makes the
// listening socket inside the sandbox's network namespace) and that
// connects it to the destinations its sandbox.Network allows, and to
// nothing else.
//
// Security: the sandbox's network namespace has no route anywhere; the
// proxy's socket is its only way out, and the proxy decides every
// connection on the host, where the program cannot interfere:
//
//   - It speaks HTTP: an absolute-form request ("GET http://host/...")
//     is forwarded, one per connection; a CONNECT request opens a tunnel
//     (HTTPS, or any TCP to an allowed address and port). TLS is never
//     intercepted: when the first bytes the program sends in a tunnel to a
//     name are a TLS ClientHello, its server name (SNI) must be the CONNECT
//     host, or the tunnel is closed before the hello leaves (a hello
//     without a server name passes; a tunnel to an address is not
//     checked: the address is what was allowed). What travels inside an
//     allowed tunnel, or in an HTTP request's body, is the program's: a
//     destination that serves other names at the same address (a CDN)
//     serves whichever the program names in plain HTTP's Host header
//     inside a tunnel. An HTTP request the proxy forwards has its Host
//     set to the destination decided.
//   - It resolves names itself, with its own resolver (Config.Resolver):
//     the program's idea of DNS does not matter. Every address a name
//     resolves to is checked, and the proxy dials only an address it
//     checked, so a name that resolves once to a public address and then
//     to a private one (DNS rebinding) never reaches the private one.
//   - It refuses loopback, private (RFC 1918, ULA), shared (CGNAT),
//     link-local (the metadata address 169.254.169.254 among them),
//     multicast, unspecified, broadcast and reserved addresses, and
//     IPv6 prefixes that embed IPv4 addresses, whatever the allowlist
//     says (sandbox.ForbiddenAddr).
//   - Everything the program causes is bounded: the connections it opens
//     (refused ones count), the bytes they carry, the size of a request
//     head and the entries of the log. When the run ends, Close ends every
//     connection.
package egress
