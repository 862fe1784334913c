package e2bapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"sort"
	"strings"

	"connectrpc.com/connect"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// mountFilesystem serves filesystem.Filesystem over the session's working
// directory (see envdWorkPath). Stat and ListDir read the session's file
// listing (no cell: they answer while a command runs); MakeDir, Move and
// Remove run a platform cell (envd_fscell.go), which waits for a running
// command to end. Watching is not offered.
func (e *envd) mountFilesystem(mux *http.ServeMux) {
	opts := envdHandlerOptions()
	mux.Handle("/filesystem.Filesystem/Stat", connect.NewUnaryHandler("/filesystem.Filesystem/Stat", e.stat, opts...))
	mux.Handle("/filesystem.Filesystem/ListDir", connect.NewUnaryHandler("/filesystem.Filesystem/ListDir", e.listDir, opts...))
	mux.Handle("/filesystem.Filesystem/MakeDir", connect.NewUnaryHandler("/filesystem.Filesystem/MakeDir", e.makeDir, opts...))
	mux.Handle("/filesystem.Filesystem/Move", connect.NewUnaryHandler("/filesystem.Filesystem/Move", e.move, opts...))
	mux.Handle("/filesystem.Filesystem/Remove", connect.NewUnaryHandler("/filesystem.Filesystem/Remove", e.remove, opts...))
	const noWatch = "a session's files are listed on request, not watched"
	mux.Handle("/filesystem.Filesystem/WatchDir", connect.NewServerStreamHandler("/filesystem.Filesystem/WatchDir",
		func(context.Context, *connect.Request[watchRequest], *connect.ServerStream[watchResponse]) error {
			return envdUnimplemented("filesystem.Filesystem/WatchDir", noWatch)
		}, opts...))
	for _, name := range []string{"CreateWatcher", "GetWatcherEvents", "RemoveWatcher"} {
		procedure := "/filesystem.Filesystem/" + name
		mux.Handle(procedure, connect.NewUnaryHandler(procedure,
			func(context.Context, *connect.Request[watchRequest]) (*connect.Response[watchResponse], error) {
				return nil, envdUnimplemented("filesystem.Filesystem/"+name, noWatch)
			}, opts...))
	}
}

// envdFiles is the session's working directory as a listing, by name.
type envdFiles map[string]sandbox.FileInfo

// envdListing reads the session's file listing.
func envdListing(ctx context.Context, ss *service.Session) (envdFiles, error) {
	list, err := ss.ListFiles(ctx)
	if err != nil {
		return nil, envdSessionError(err)
	}
	fs := make(envdFiles, len(list))
	for _, f := range list {
		fs[f.Name] = f
	}
	return fs, nil
}

// entry describes rel, the working directory itself for ".": nil if it
// does not exist.
func (fs envdFiles) entry(rel string) *envdEntry {
	if rel == "." {
		return &envdEntry{Name: path.Base(envdHome), Type: envdFileTypeDir, Path: envdHome}
	}
	f, ok := fs[rel]
	if !ok {
		return nil
	}
	t := f.ModTime.UTC()
	e := &envdEntry{Name: path.Base(rel), Type: envdFileTypeFile, Path: envdPath(rel), Size: f.Size, ModifiedTime: &t}
	if f.Dir {
		e.Type = envdFileTypeDir
	}
	return e
}

// envdNotFound is the error of a path that does not exist.
func envdNotFound(p string) error {
	return connect.NewError(connect.CodeNotFound, fmt.Errorf("path %q: no such file or directory", p))
}

// stat describes a file or directory (files.exists, files.getInfo).
func (e *envd) stat(ctx context.Context, req *connect.Request[statRequest]) (*connect.Response[statResponse], error) {
	sb, err := e.sandbox(ctx)
	if err != nil {
		return nil, err
	}
	rel, err := envdWorkPath("path", req.Msg.Path)
	if err != nil {
		return nil, err
	}
	fs, err := envdListing(ctx, sb.session())
	if err != nil {
		return nil, err
	}
	ent := fs.entry(rel)
	if ent == nil {
		return nil, envdNotFound(req.Msg.Path)
	}
	return connect.NewResponse(&statResponse{Entry: ent}), nil
}

// listDir lists a directory (files.list) down to depth levels (1: its
// own entries; 0 counts as 1).
func (e *envd) listDir(ctx context.Context, req *connect.Request[listDirRequest]) (*connect.Response[listDirResponse], error) {
	sb, err := e.sandbox(ctx)
	if err != nil {
		return nil, err
	}
	rel, err := envdWorkPath("path", req.Msg.Path)
	if err != nil {
		return nil, err
	}
	fs, err := envdListing(ctx, sb.session())
	if err != nil {
		return nil, err
	}
	dir := fs.entry(rel)
	switch {
	case dir == nil:
		return nil, envdNotFound(req.Msg.Path)
	case dir.Type != envdFileTypeDir:
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("path %q: must be a directory, it is a file", req.Msg.Path))
	}
	depth := max(int(req.Msg.Depth), 1)
	prefix := rel + "/"
	if rel == "." {
		prefix = ""
	}
	out := []envdEntry{}
	for name := range fs {
		below, ok := strings.CutPrefix(name, prefix)
		if !ok || strings.Count(below, "/") >= depth {
			continue
		}
		out = append(out, *fs.entry(name))
	}
	envdSortEntries(out)
	return connect.NewResponse(&listDirResponse{Entries: out}), nil
}

// makeDir makes a directory and its parents (files.makeDir):
// CodeAlreadyExists if the path exists, which the SDK answers as false.
func (e *envd) makeDir(ctx context.Context, req *connect.Request[makeDirRequest]) (*connect.Response[makeDirResponse], error) {
	sb, err := e.sandbox(ctx)
	if err != nil {
		return nil, err
	}
	rel, err := envdWorkPath("path", req.Msg.Path)
	if err != nil {
		return nil, err
	}
	if err := runFSCell(ctx, sb, fsOp{Op: "mkdir", Path: rel}, req.Msg.Path, ""); err != nil {
		return nil, err
	}
	ent, err := statAfter(ctx, sb, rel)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&makeDirResponse{Entry: ent}), nil
}

// move renames a file or directory (files.rename), making the
// destination's parents.
func (e *envd) move(ctx context.Context, req *connect.Request[moveRequest]) (*connect.Response[moveResponse], error) {
	sb, err := e.sandbox(ctx)
	if err != nil {
		return nil, err
	}
	src, err := envdWorkPath("source", req.Msg.Source)
	if err != nil {
		return nil, err
	}
	dst, err := envdWorkPath("destination", req.Msg.Destination)
	if err != nil {
		return nil, err
	}
	if src == "." || dst == "." {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("source and destination: must not be %s itself", envdHome))
	}
	if err := runFSCell(ctx, sb, fsOp{Op: "move", Path: src, To: dst}, req.Msg.Source, req.Msg.Destination); err != nil {
		return nil, err
	}
	ent, err := statAfter(ctx, sb, dst)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&moveResponse{Entry: ent}), nil
}

// remove removes a file, or a directory with everything in it
// (files.remove).
func (e *envd) remove(ctx context.Context, req *connect.Request[removeRequest]) (*connect.Response[removeResponse], error) {
	sb, err := e.sandbox(ctx)
	if err != nil {
		return nil, err
	}
	rel, err := envdWorkPath("path", req.Msg.Path)
	if err != nil {
		return nil, err
	}
	if rel == "." {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("path: must not be %s itself", envdHome))
	}
	if err := runFSCell(ctx, sb, fsOp{Op: "remove", Path: rel}, req.Msg.Path, ""); err != nil {
		return nil, err
	}
	return connect.NewResponse(&removeResponse{}), nil
}

// statAfter describes rel after an operation made it.
func statAfter(ctx context.Context, sb envdSandbox, rel string) (*envdEntry, error) {
	fs, err := envdListing(ctx, sb.session())
	if err != nil {
		return nil, err
	}
	if ent := fs.entry(rel); ent != nil {
		return ent, nil
	}
	// A name the redactor changed is listed under its redacted form.
	return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("%s: made, but not in the session's file listing", envdPath(rel)))
}

// envdSessionError turns a session's error into a Connect error.
func envdSessionError(err error) error {
	var se *service.Error
	if errors.As(err, &se) {
		switch se.Kind {
		case service.KindNotFound:
			return connect.NewError(connect.CodeNotFound, err)
		case service.KindSessionClosed:
			return connect.NewError(connect.CodeUnavailable, err)
		}
	}
	var ie *sandbox.InputError
	if errors.As(err, &ie) {
		return connect.NewError(connect.CodeInvalidArgument, err)
	}
	return connect.NewError(connect.CodeInternal, err)
}

// envdSortEntries orders a listing by path.
func envdSortEntries(es []envdEntry) {
	sort.Slice(es, func(i, j int) bool { return es[i].Path < es[j].Path })
}
