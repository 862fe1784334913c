package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// startPostgres initdb's a throwaway PostgreSQL cluster, starts it on a
// free loopback port (as the postgres user when the test runs as root:
// initdb refuses root) and returns the URL of its postgres database; it
// is stopped when tb ends.
func startPostgres(tb testing.TB) string {
	tb.Helper()
	return startPostgresOn(tb, "127.0.0.1", "")
}

// startPostgresOn is startPostgres listening on addr only, which also
// lets in (trust) the clients of network clients, a CIDR, when not empty:
// the nodes of the network namespaces' tests (cluster_netns_helpers_test.go).
func startPostgresOn(tb testing.TB, addr, clients string) string {
	tb.Helper()
	bin := testenv.Postgres(tb)
	dir := tb.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} { // the postgres user must reach it
		if err := os.Chmod(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	base := filepath.Join(dir, "pg")
	if err := os.Mkdir(base, 0o700); err != nil {
		tb.Fatal(err)
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		tb.Fatalf("the postgres user must own the cluster: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(base, uid, gid); err != nil {
		tb.Fatal(err)
	}
	data := filepath.Join(base, "data")
	run := func(name string, args ...string) {
		tb.Helper()
		cmd := exec.Command("runuser", append([]string{"-u", "postgres", "--", filepath.Join(bin, name)}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			tb.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C")
	if clients != "" {
		hba, err := os.OpenFile(filepath.Join(data, "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
		if err == nil {
			_, err = fmt.Fprintf(hba, "host all all %s trust\n", clients)
			err = errors.Join(err, hba.Close())
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
	port := freeLoopbackPort(tb)
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=%s -c fsync=off -c synchronous_commit=off -c full_page_writes=off", port, base, addr)
	run("pg_ctl", "-D", data, "-l", filepath.Join(base, "log"), "-o", opts, "-w", "-t", "30", "start")
	tb.Cleanup(func() { run("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop") })
	return fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", net.JoinHostPort(addr, strconv.Itoa(port)))
}

// startNATSServer starts Debian's nats-server with JetStream on a free
// loopback port and a store of its own, and returns its URL and process;
// it is killed when tb ends.
func startNATSServer(tb testing.TB) (string, *exec.Cmd) {
	tb.Helper()
	return startNATSServerOn(tb, "127.0.0.1")
}

// startNATSServerOn is startNATSServer listening on addr only.
func startNATSServerOn(tb testing.TB, addr string) (string, *exec.Cmd) {
	tb.Helper()
	bin := testenv.NATSServer(tb)
	port := freeLoopbackPort(tb)
	hostPort := net.JoinHostPort(addr, strconv.Itoa(port))
	cmd := exec.Command(bin, "-js", "-a", addr, "-p", strconv.Itoa(port), "-sd", tb.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("tcp", hostPort); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s did not listen within 10s: %s", bin, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "nats://" + hostPort, cmd
}

// freeLoopbackPort returns a loopback TCP port that was free a moment ago.
func freeLoopbackPort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
