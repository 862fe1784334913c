package cluster

import (
	"fmt"
	"net"
	"strconv"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
)

// startEmbedded starts the NATS server of a node with Config.URL
// Embedded: JetStream on, its store in c.DataDir, clients accepted on
// c.Listen with c.Token, if any. It returns the server and the URL its
// own node connects with.
func startEmbedded(c Config) (*natsserver.Server, string, error) {
	host, portText, _ := net.SplitHostPort(c.Listen) // checked by Config.check
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, "", fmt.Errorf("cluster: listen address %q: port: %v", c.Listen, err)
	}
	if port == 0 {
		port = natsserver.RANDOM_PORT // the server's word for "any free port"
	}
	opts := &natsserver.Options{
		ServerName:    "crucible-" + c.NodeID,
		Host:          host,
		Port:          port,
		JetStream:     true,
		StoreDir:      c.DataDir,
		Authorization: c.Token,
		NoSigs:        true, // the server's own signals are crucible serve's
		NoLog:         true,
	}
	ns, err := natsserver.NewServer(opts)
	if err != nil {
		return nil, "", fmt.Errorf("cluster: embedded NATS server: %w", err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, "", fmt.Errorf("cluster: embedded NATS server on %s did not start within 10s (is the port taken?)", c.Listen)
	}
	return ns, ns.ClientURL(), nil
}
