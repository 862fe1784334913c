package sandbox

import "time"

// Verdicts of a Connection.
const (
	// VerdictAllowed: the proxy connected the program to its destination.
	VerdictAllowed = "allowed"
	// VerdictRefused: the proxy refused the connection; nothing reached
	// the destination.
	VerdictRefused = "refused"
	// VerdictFailed: the destination was allowed but could not be reached
	// (its name did not resolve, or the dial failed).
	VerdictFailed = "failed"
)

// NetworkLog is what a run with an allowlist did on the network: every
// connection it opened to the proxy, allowed or refused.
type NetworkLog struct {
	// Connections are the connections in the order they were opened, at
	// most the run's Network.MaxConnections plus MaxUnlisted.
	Connections []Connection `json:"connections"`
	// Unlisted counts the connections refused once the list was full.
	Unlisted int `json:"unlisted,omitempty"`
	// BytesSent and BytesReceived total the connections' bytes.
	BytesSent     int64 `json:"bytes_sent"`
	BytesReceived int64 `json:"bytes_received"`
}

// MaxUnlisted is how many connections refused past the connection cap a
// NetworkLog lists before it only counts them.
const MaxUnlisted = 16

// Connection is one connection a program opened through the proxy.
type Connection struct {
	// Time is when the proxy accepted the connection.
	Time time.Time `json:"time"`
	// Kind is how the program asked: "http" (a proxied HTTP request),
	// "connect" (a CONNECT tunnel: HTTPS, or any TCP) or "" when the
	// request could not be read.
	Kind string `json:"kind,omitempty"`
	// Host is the destination as the program named it: a name or an
	// address. It is the program's text, shown as is: treat it as
	// untrusted.
	Host string `json:"host,omitempty"`
	// IP is the address the proxy dialled (or refused), when it got one.
	IP string `json:"ip,omitempty"`
	// Port is the destination port.
	Port int `json:"port,omitempty"`
	// BytesSent and BytesReceived count the bytes the program sent and
	// received on the connection, proxy protocol included.
	BytesSent     int64 `json:"bytes_sent"`
	BytesReceived int64 `json:"bytes_received"`
	// Verdict is VerdictAllowed, VerdictRefused or VerdictFailed.
	Verdict string `json:"verdict"`
	// Reason says why a connection was refused, or why an allowed one was
	// cut (a cap reached).
	Reason string `json:"reason,omitempty"`
}
