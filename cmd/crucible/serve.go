package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	"github.com/crucible-sandbox/crucible/server"
	"github.com/crucible-sandbox/crucible/store"
)

// serveFlags are the flags of `crucible serve`.
type serveFlags struct {
	addr     string
	db       string
	warm     int
	prestart int
	rootfs   string
	image    string
	store    string
}

// shutdownGrace is how long a stopping server waits for runs in progress
// before it kills them.
const shutdownGrace = 30 * time.Second

func newServeCommand() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API on loopback",
		Long: `Serve Crucible's HTTP API: runs (POST /v1/runs, GET /v1/runs[/{id}]),
sessions (/v1/sessions/...), /healthz and /metrics.

Run records and the result cache are kept in --db: a SQLite file path (the
default is ` + store.DefaultSQLitePath + `) or a postgres:// URL. Runs a
previous server left unfinished are marked interrupted at start.

There are no API keys yet, so the server only listens on a loopback address.
SIGINT or SIGTERM stops it: no new runs are admitted and those in progress
get ` + shutdownGrace.String() + ` to finish.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return serve(cmd.Context(), &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", "127.0.0.1:8080", "listen address; must be loopback (127.0.0.1, ::1 or localhost)")
	fl.StringVar(&f.db, "db", "", "run store: SQLite file path or postgres:// URL (default "+store.DefaultSQLitePath+")")
	fl.IntVar(&f.warm, "warm", 0, "Python sandboxes kept running with the interpreter started")
	fl.IntVar(&f.prestart, "prestart", 2, "sandboxes kept built ahead of requests")
	fl.StringVar(&f.rootfs, "rootfs", "", "root filesystem directory (default: the host's system directories, read-only)")
	fl.StringVar(&f.image, "image", "", "run in a built image (see `crucible image ls`)")
	fl.StringVar(&f.store, "store", image.DefaultStore, "image store directory")
	return cmd
}

// checkLoopback refuses a listen address that is not on loopback: without
// API keys, anyone who can reach the server can run code on this host.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--addr %q: no API keys exist yet: listen on 127.0.0.1/::1/localhost", addr)
	}
	return nil
}

func serve(ctx context.Context, f *serveFlags) error {
	if err := checkLoopback(f.addr); err != nil {
		return usageError(err)
	}
	if f.warm < 0 || f.prestart < 0 {
		return usageError(errors.New("--warm and --prestart must not be negative"))
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	var imageDigest string
	rt, err := startRuntime(f.rootfs, f.image, f.store, func(o *linux.Options) {
		o.Warm, o.Prestart = f.warm, f.prestart
		imageDigest = o.ImageDigest
	})
	if err != nil {
		return err
	}
	defer rt.Close()
	st, err := store.Open(ctx, f.db)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crucible:", err)
		return exitCodeError(exitInternal)
	}
	defer st.Close()
	redactCfg := policy.DefaultRedactConfig()
	redactCfg.HostPaths = serverHostPaths(f.db, f.store)
	redactor, err := policy.NewRedactor(redactCfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crucible:", err)
		return exitCodeError(exitInternal)
	}
	srv, err := server.New(server.Config{Runtime: rt, ImageDigest: imageDigest, Store: st, Redactor: redactor, Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "crucible:", err)
		return exitCodeError(exitInternal)
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crucible:", err)
		return exitCodeError(exitInternal)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	log.Info("serving the Crucible API on loopback only (no API keys exist yet)", "addr", ln.Addr().String())

	select {
	case err := <-served:
		fmt.Fprintln(os.Stderr, "crucible:", err)
		return exitCodeError(exitInternal)
	case <-ctx.Done():
	}
	log.Info("shutting down: waiting for runs in progress", "grace", shutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		log.Warn("HTTP connections still open at shutdown", "err", err)
	}
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("runs killed at shutdown", "err", err)
	}
	log.Info("stopped")
	return nil
}

// sandboxTopDirs are paths every sandbox has of its own: a host directory
// under one of them is not redacted, or a program's own paths (/work/...)
// would be.
var sandboxTopDirs = []string{"work", "tmp", "code", "dev", "proc", "usr", "etc", "bin", "sbin", "lib", "lib64"}

// serverHostPaths are the host directories the server's own results must
// not reveal (in platform errors, for example): the database's directory,
// the image store, the working and home directories. "/", relative paths
// and paths under sandboxTopDirs are left out.
func serverHostPaths(db, imageStore string) []string {
	var paths []string
	add := func(p string) {
		p = filepath.Clean(p)
		top, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
		if filepath.IsAbs(p) && p != "/" && !slices.Contains(sandboxTopDirs, top) && !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	switch {
	case db == "":
		add(filepath.Dir(store.DefaultSQLitePath))
	case !strings.Contains(db, "://"):
		add(filepath.Dir(strings.TrimPrefix(db, "sqlite:")))
	}
	add(imageStore)
	if wd, err := os.Getwd(); err == nil {
		add(wd)
	}
	if home, err := os.UserHomeDir(); err == nil {
		add(home)
	}
	return paths
}
