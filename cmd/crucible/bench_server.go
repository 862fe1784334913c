//go:build linux

package main

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/server"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

// benchServerConfig is what a benchmark's API server is started with.
type benchServerConfig struct {
	// db is the run store, SQLite file path or postgres:// URL; "" for a
	// temporary SQLite file removed on close.
	db string
	// maxConcurrent and maxQueue are the service's admission bounds, 0
	// for its defaults.
	maxConcurrent, maxQueue int
	// clients is how many clients send requests at once: each keeps its
	// connection.
	clients int
}

// benchServer is the API server the benchmarks run in this process: the
// runtime behind the service and the HTTP server, as crucible serve
// chains them, listening on a loopback port the kernel picks, and a
// client of the Go SDK talking to it over real HTTP connections.
type benchServer struct {
	client *client.Client
	// logs collects the warnings and errors the server logs.
	logs *serverLog
	// closers release what the server holds, last started first.
	closers []func()
}

// startBenchServer starts an API server serving rt, which stays the
// caller's to close, after the server's close. On error, what was
// started is released.
func startBenchServer(ctx context.Context, rt service.Runtime, c benchServerConfig) (_ *benchServer, err error) {
	s := &benchServer{logs: newServerLog()}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	db := c.db
	if db == "" {
		dir, err := os.MkdirTemp("", "crucible-bench-")
		if err != nil {
			return nil, err
		}
		s.closers = append(s.closers, func() { os.RemoveAll(dir) })
		db = filepath.Join(dir, "runs.db")
	}
	st, err := store.Open(ctx, db)
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, func() { st.Close() })
	redactCfg := policy.DefaultRedactConfig()
	redactCfg.HostPaths = serverHostPaths(db, "")
	redactor, err := policy.NewRedactor(redactCfg)
	if err != nil {
		return nil, err
	}
	svc, err := service.New(service.Config{Runtime: rt, Store: st, Redactor: redactor,
		MaxConcurrent: c.maxConcurrent, MaxQueue: c.maxQueue, Logger: s.logs.logger()})
	if err != nil {
		return nil, err
	}
	srv, err := server.New(server.Config{Service: svc, Keys: st, Logger: s.logs.logger()})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	hs := srv.NewHTTPServer()
	go func() { _ = hs.Serve(ln) }()
	s.closers = append(s.closers, func() {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		_ = hs.Shutdown(sctx)
		_ = svc.Shutdown(sctx)
	})
	// Every client keeps its connection: net/http's default of 2 idle
	// connections per host would make the others reconnect each time.
	tr := &http.Transport{MaxIdleConnsPerHost: max(c.clients, 1)}
	s.closers = append(s.closers, tr.CloseIdleConnections)
	s.client, err = client.New("http://"+ln.Addr().String(), client.WithHTTPClient(&http.Client{Transport: tr}))
	if err != nil {
		return nil, err
	}
	return s, nil
}

// close stops the server and releases what it holds, last started first.
func (s *benchServer) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}
