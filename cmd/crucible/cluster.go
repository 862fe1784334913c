package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/crucible-sandbox/crucible/cluster"
	"github.com/crucible-sandbox/crucible/service"
)

// clusterTokenEnv holds the token of an embedded NATS server
// (cluster.Config.Token): an environment variable, not a flag, so that it
// is not seen in the process list.
const clusterTokenEnv = "CRUCIBLE_CLUSTER_TOKEN"

// defaultClusterData is where an embedded NATS server keeps its store.
const defaultClusterData = "/var/lib/crucible/nats"

// clusterFlags are the cluster flags of `crucible serve`.
type clusterFlags struct {
	url, nodeID, advertise, listen, data string
	// given are the names of the flags above given on the command line
	// (beyond --cluster), which check refuses where they would be ignored.
	given []string
}

// clusterFlagNames are the flags that go with --cluster.
var clusterFlagNames = []string{"node-id", "advertise", "cluster-listen", "cluster-data"}

func (c *clusterFlags) addFlags(fl *pflag.FlagSet) {
	fl.StringVar(&c.url, "cluster", "", "join a cluster through the NATS JetStream server `URL` (nats://[TOKEN@]HOST:PORT), or \"embedded\" to start one in this process; needs --db postgres://... (docs/cluster.md)")
	fl.StringVar(&c.nodeID, "node-id", "", "this node's `ID` in the cluster (default: the host name)")
	fl.StringVar(&c.advertise, "advertise", "", "this node's HTTP base `URL` as the other nodes reach it (default: http:// and the listen address, or the host name if that is unspecified)")
	fl.StringVar(&c.listen, "cluster-listen", cluster.DefaultListen, "with --cluster embedded: the NATS server's client `ADDR`; beyond loopback it needs $"+clusterTokenEnv)
	fl.StringVar(&c.data, "cluster-data", defaultClusterData, "with --cluster embedded: the NATS server's JetStream store `DIR`")
}

// check refuses cluster flags that cannot work: the nodes must share a
// Postgres store, or a key, a record or a run known on one node would be
// unknown on the others.
func (c *clusterFlags) check(db string) error {
	for _, name := range c.given {
		switch {
		case c.url == "":
			return fmt.Errorf("--%s needs --cluster", name)
		case c.url != cluster.Embedded && (name == "cluster-listen" || name == "cluster-data"):
			return fmt.Errorf("--%s needs --cluster embedded: it configures the NATS server this node starts", name)
		}
	}
	if c.url == "" {
		return nil
	}
	if !strings.HasPrefix(db, "postgres://") && !strings.HasPrefix(db, "postgresql://") {
		return fmt.Errorf("--cluster needs --db postgres://...: the nodes of a cluster share one Postgres store (got --db %q)", db)
	}
	return nil
}

// join joins the cluster as a node serving at addr, offering images, its
// load read from svc once it is set.
func (c *clusterFlags) join(ctx context.Context, addr net.Addr, images []string, svc *atomic.Pointer[service.Service], log interface {
	Info(string, ...any)
}) (*cluster.Node, error) {
	id := c.nodeID
	if id == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("--node-id: the host name is unknown (%v): name the node", err)
		}
		id = h
	}
	adv := c.advertise
	if adv == "" {
		tcp, _ := addr.(*net.TCPAddr)
		host := addr.String()
		if tcp != nil && tcp.IP.IsUnspecified() {
			h, _ := os.Hostname()
			host = net.JoinHostPort(h, fmt.Sprint(tcp.Port))
		}
		adv = "http://" + host
	}
	node, err := cluster.Join(ctx, cluster.Config{URL: c.url, NodeID: id, Advertise: adv, Listen: c.listen, DataDir: c.data,
		Token: os.Getenv(clusterTokenEnv), Images: images, Load: func() cluster.Load {
			s := svc.Load()
			if s == nil {
				return cluster.Load{}
			}
			l := s.Load()
			return cluster.Load{Slots: l.Slots, Busy: l.Busy, Sessions: l.Sessions, MaxSessions: l.MaxSessions}
		}})
	if err != nil {
		return nil, err
	}
	log.Info("joined the cluster", "node", id, "advertise", adv)
	return node, nil
}

func newClusterCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "cluster", Short: "Inspect a cluster of crucible serve nodes",
		Example: "  crucible cluster status --cluster nats://127.0.0.1:4222",
		Long: `A cluster is crucible serve nodes started with --cluster nats://... (or
embedded) and --db postgres://...: they share the store and a NATS
JetStream server, and forward each other the requests for the sessions
they hold. See docs/cluster.md.`}
	var url string
	var asJSON bool
	status := &cobra.Command{
		Use:     "status",
		Short:   "Show the live nodes: their address, images, slots and load, and their last heartbeat",
		Example: "  crucible cluster status --cluster nats://127.0.0.1:4222\n  crucible cluster status --cluster nats://127.0.0.1:4222 --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if url == "" {
				return usageError(errors.New("--cluster is required: the NATS server's URL, nats://[TOKEN@]HOST:PORT"))
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			nodes, err := cluster.Status(ctx, url)
			if err != nil {
				return platformError(err)
			}
			if asJSON {
				if nodes == nil {
					nodes = []cluster.NodeInfo{}
				}
				return json.NewEncoder(os.Stdout).Encode(nodes)
			}
			printNodes(nodes, time.Now())
			return nil
		},
	}
	status.Flags().StringVar(&url, "cluster", "", "the cluster's NATS server `URL`, nats://[TOKEN@]HOST:PORT")
	status.Flags().BoolVar(&asJSON, "json", false, "print the nodes as JSON")
	cmd.AddCommand(status)
	return cmd
}

// printNodes prints nodes as a table, their heartbeats' age as of now.
func printNodes(nodes []cluster.NodeInfo, now time.Time) {
	if len(nodes) == 0 {
		fmt.Println("no live nodes")
		return
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tADVERTISE\tIMAGES\tSLOTS\tBUSY\tSESSIONS\tHEARTBEAT\tUP")
	for _, n := range nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d/%d\t%s ago\t%s\n", n.ID, n.Advertise, strings.Join(n.Images, ","), n.Slots, n.Busy,
			n.Sessions, n.MaxSessions, now.Sub(n.HeartbeatAt).Round(100*time.Millisecond), now.Sub(n.StartedAt).Round(time.Second))
	}
	tw.Flush()
}
