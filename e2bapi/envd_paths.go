package e2bapi

import (
	"fmt"
	"path"
	"strings"

	"connectrpc.com/connect"
)

// envdHome is where E2B's SDKs and programs expect their files: the
// session's working directory (/work in the sandbox), under the name E2B
// gives it.
const envdHome = "/home/user"

// envdWorkPath maps a path of an E2B request to a name in the session's
// working directory ("." for the directory itself): an absolute path
// under /home/user, or a path relative to it. Any other path, or one that
// climbs out with "..", is an InvalidArgument naming field: the file
// operations reach the working directory only.
func envdWorkPath(field, p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("%s: must not contain a NUL byte", field))
	}
	abs := p
	if !strings.HasPrefix(p, "/") {
		abs = envdHome + "/" + p
	}
	abs = path.Clean(abs)
	if abs == envdHome {
		return ".", nil
	}
	if rel, ok := strings.CutPrefix(abs, envdHome+"/"); ok {
		return rel, nil
	}
	return "", connect.NewError(connect.CodeInvalidArgument, fmt.Errorf(
		"%s: must be under %s (the sandbox's working directory) or relative to it, got %q", field, envdHome, p))
}

// envdPath is the E2B path of a name in the working directory.
func envdPath(rel string) string {
	if rel == "." {
		return envdHome
	}
	return envdHome + "/" + rel
}
