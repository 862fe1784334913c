package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/mcpserver"
	"github.com/crucible-sandbox/crucible/server"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

func newMCPCommand() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the Model Context Protocol over stdio, for MCP clients",
		Example: `  crucible mcp --image datascience --image host

  # in a desktop MCP client's configuration:
  {"mcpServers": {"crucible": {"command": "crucible", "args": ["mcp", "--image", "datascience"]}}}`,
		Long: `Serve Crucible to one Model Context Protocol client over stdin and stdout
(JSON-RPC messages, one a line); logs go to stderr. The client starts it as a
subprocess. Its tools run code in the sandbox through the same pipeline as
crucible serve (limits, run records in --db, redaction, images, hints), as
tenant "` + server.DefaultTenant + `":

  run_code        run a program (python, javascript, bash) with files,
                  stdin, limits and an image; PNG files it writes come back
                  as images, others as resource links
  session_create  open a persistent Python session
  session_exec    execute a cell in it
  session_files   list, read or write its files
  session_close   close it
  run_get         read a past run's record
  analysis_create load data files into DataFrames in a session and profile
                  them
  analysis_ask    have the analyst agent answer a question about them
                  (needs a model: --config "model", or CRUCIBLE_MODEL and
                  its key, as for crucible serve)

A program's output streams as progress notifications when the client asks
for progress; cancelling a call kills its run. Resources: a run's record at
crucible://runs/{id} and its files at crucible://runs/{id}/artifacts/{name}.
Prompt: data_analyst, a model set up as a data analyst over a session.
--image, --rootfs, --store, --db, --config and --warm are those of crucible
serve: without --image, the host's directories for runs and, when built,
the datascience image for sessions and analyses; a zygote slot per CPU.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.warmGiven = cmd.Flags().Changed("warm")
			f.runtimeGiven, f.dockerImageGiven = cmd.Flags().Changed("runtime"), cmd.Flags().Changed("docker-image")
			return serveMCP(cmd.Context(), &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "JSON file of limits, redaction and the analyst's model, as for crucible serve")
	fl.StringVar(&f.db, "db", "", "run store: SQLite file path or postgres:// URL (default "+store.DefaultSQLitePath+")")
	fl.StringVar(&f.rootfs, "rootfs", "", "root filesystem directory (default: the host's system directories, read-only)")
	fl.StringArrayVar(&f.images, "image", nil, "offer the built image `NAME`, or \"host\"; repeatable, the first is the default")
	fl.StringVar(&f.store, "store", image.DefaultStore, "image store directory")
	addWarmFlag(fl, &f.warm)
	f.runtime.addFlags(fl)
	return cmd
}

// serveMCP serves MCP over stdio until the client closes stdin or a
// signal stops it.
func serveMCP(ctx context.Context, f *serveFlags) error {
	conf, redactor, err := loadConfigAndRedactor(f.config, f.db, f.store)
	if err != nil {
		return err
	}
	f.runtime = f.runtime.withConfig(conf, f.runtimeGiven, f.dockerImageGiven)
	if err := f.runtime.check(); err != nil {
		return err
	}
	names, err := imageNames(f.images, f.rootfs, f.store, f.runtime)
	if err != nil {
		return usageError(err)
	}
	if f.warm < 0 {
		return usageError(errors.New("--warm must not be negative"))
	}
	if err := checkUIDCount(conf, f, len(names)); err != nil {
		return usageError(err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := store.Open(ctx, f.db)
	if err != nil {
		return platformError(err)
	}
	defer st.Close()
	images, err := startImages(ctx, names, f, runtimeSettings{warm: func(root string) int { return f.warmFor(root, log) },
		uidBase: conf.UIDBase, uidCount: conf.UIDCount, logger: log})
	if err != nil {
		return err
	}
	defer closeImages(images)
	cfg, err := serviceConfig(images, st, redactor, log, conf)
	if err != nil {
		return err
	}
	svc, err := service.New(cfg)
	if err != nil {
		return usageError(err)
	}
	logImages(log, svc, f.warmPerImage())
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		_ = svc.Shutdown(sctx)
	}()
	err = mcpserver.New(svc, server.DefaultTenant, mcpserver.Version).Run(ctx, &mcp.StdioTransport{})
	if err != nil && ctx.Err() == nil && !clientLeft(err) { // not a signal
		return platformError(err)
	}
	return nil
}

// codeServerClosing is the JSON-RPC error the SDK's connection ends with
// once its input is closed: the client left, which ends the server.
const codeServerClosing = -32004

// clientLeft reports whether err says the client closed the connection.
func clientLeft(err error) bool {
	var we *jsonrpc.Error
	return errors.Is(err, io.EOF) || errors.As(err, &we) && we.Code == codeServerClosing
}
