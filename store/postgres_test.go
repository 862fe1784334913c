package store

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// pgCluster is a throwaway PostgreSQL cluster for the tests.
type pgCluster struct {
	port  int
	admin *sql.DB // connected to the "postgres" database
	dbs   int     // databases created so far
}

// startPostgres initdb's a cluster in a temporary directory, starts it on a
// free localhost port with fsync off, and stops it when t ends. It runs the
// server as the postgres user when the test runs as root (initdb refuses
// root). It needs Debian's PostgreSQL binaries (testenv.Postgres).
func startPostgres(t *testing.T) *pgCluster {
	t.Helper()
	bin := testenv.Postgres(t)

	dir := t.TempDir()
	asPostgres := os.Geteuid() == 0
	if asPostgres {
		// The postgres user must reach its directory inside root's temp dir.
		for _, d := range []string{filepath.Dir(dir), dir} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	base := filepath.Join(dir, "pg")
	if err := os.Mkdir(base, 0o700); err != nil {
		t.Fatal(err)
	}
	if asPostgres {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs the postgres user to own the cluster: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(base, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(base, "data")
	run := func(name string, args ...string) {
		t.Helper()
		path := filepath.Join(bin, name)
		var cmd *exec.Cmd
		if asPostgres {
			cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
		} else {
			cmd = exec.Command(path, args...)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}

	run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C")
	port := freePort(t)
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off", port, base)
	run("pg_ctl", "-D", data, "-l", filepath.Join(base, "log"), "-o", opts, "-w", "-t", "30", "start")
	t.Cleanup(func() { run("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop") })

	admin, err := sql.Open("pgx", fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	return &pgCluster{port: port, admin: admin}
}

// newDatabase creates an empty database and returns its URL.
func (c *pgCluster) newDatabase(t *testing.T) string {
	t.Helper()
	c.dbs++
	name := fmt.Sprintf("crucible_test_%d", c.dbs)
	if _, err := c.admin.ExecContext(context.Background(), "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, name)
}

// freePort returns a localhost TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
