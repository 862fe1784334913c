package main

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	units "github.com/docker/go-units"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// maxRefusedNamed bounds the refused destinations a summary names.
const maxRefusedNamed = 3

// networkSummary is the summary's account of a run's connections: how
// many by verdict, the bytes, and the first refused destinations, each
// with the proxy's reason (the program's text: the summary goes through
// the display).
func networkSummary(log *sandbox.NetworkLog) string {
	counts := map[string]int{}
	var dests, refused []string
	for _, c := range log.Connections {
		counts[c.Verdict]++
		if c.Verdict != sandbox.VerdictAllowed && c.Host != "" {
			dest := net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
			if !slices.Contains(dests, dest) {
				dests = append(dests, dest)
				if c.Reason != "" {
					dest += ": " + c.Reason
				}
				refused = append(refused, dest)
			}
		}
	}
	counts[sandbox.VerdictRefused] += log.Unlisted
	var parts []string
	for _, v := range []string{sandbox.VerdictAllowed, sandbox.VerdictRefused, sandbox.VerdictFailed} {
		if counts[v] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[v], v))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "no connection")
	}
	s := "network " + strings.Join(parts, ", ")
	if len(refused) > 0 {
		more := ""
		if len(refused) > maxRefusedNamed {
			refused, more = refused[:maxRefusedNamed], "; ..."
		}
		s += " (" + strings.Join(refused, "; ") + more + ")"
	}
	return fmt.Sprintf("%s, %s sent, %s received", s, units.HumanSize(float64(log.BytesSent)), units.HumanSize(float64(log.BytesReceived)))
}
