package hint

import (
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

func TestRule(t *testing.T) {
	const py, js = sandbox.Python, sandbox.JavaScript
	fetchFailed := "TypeError: fetch failed\n    at node:internal/deps/undici/undici:14976:13 {\n  [cause]: Error: getaddrinfo EAI_AGAIN example.com\n      at GetAddrInfoReqWrap.onlookupall [as oncomplete] (node:dns:122:26) {\n    errno: -3001,\n    code: 'EAI_AGAIN'\n  }\n}"
	tests := []struct {
		name      string
		lang      sandbox.Language
		typ, msg  string
		traceback string
		kind      kind
		module    string
	}{
		{"python gaierror", py, "socket.gaierror", "[Errno -3] Temporary failure in name resolution", "", kindOffline, ""},
		{"python unknown name", py, "socket.gaierror", "[Errno -2] Name or service not known", "", kindOffline, ""},
		{"python no address", py, "socket.gaierror", "[Errno -5] No address associated with hostname", "", kindOffline, ""},
		{"python urllib", py, "urllib.error.URLError", "<urlopen error [Errno -3] Temporary failure in name resolution>", "", kindOffline, ""},
		{"python unreachable", py, "OSError", "[Errno 101] Network is unreachable", "", kindOffline, ""},
		{"python refused", py, "ConnectionRefusedError", "[Errno 111] Connection refused", "", kindOffline, ""},
		{"python requests", py, "requests.exceptions.ConnectionError", "HTTPSConnectionPool(host='example.com', port=443): Max retries exceeded with url: / (Caused by NameResolutionError(\"<urllib3.connection.HTTPSConnection object at 0x7f>: Failed to resolve 'example.com' ([Errno -3] Temporary failure in name resolution)\"))", "", kindOffline, ""},
		{"python words alone", py, "ValueError", "Connection refused by the user", "", kindNone, ""},
		{"python phrase past the bound", py, "OSError", strings.Repeat("x", maxMessage) + "[Errno 101] Network is unreachable", "", kindNone, ""},
		{"python missing module", py, "ModuleNotFoundError", "No module named 'requests'", "", kindMissing, "requests"},
		{"python missing submodule", py, "ModuleNotFoundError", "No module named 'sklearn.foo'; 'sklearn' is not a package", "", kindMissing, "sklearn"},
		{"python import error", py, "ImportError", "No module named 'yaml'", "", kindMissing, "yaml"},
		{"python not an identifier", py, "ModuleNotFoundError", "No module named 'os; rm -rf ~'", "", kindNone, ""},
		{"python escape in the name", py, "ModuleNotFoundError", "No module named '\x1b[31mred'", "", kindNone, ""},
		{"python name too long", py, "ModuleNotFoundError", "No module named '" + strings.Repeat("a", maxModule+1) + "'", "", kindNone, ""},
		{"python other type", py, "NameError", "No module named 'requests'", "", kindNone, ""},
		{"python name error", py, "NameError", "name 'requests' is not defined", "", kindNone, ""},
		{"node missing module", js, "Error", "Cannot find module 'lodash'\nRequire stack:\n- /code/main.js", "", kindMissing, "lodash"},
		{"node missing subpath", js, "Error", "Cannot find module 'lodash/fp'", "", kindMissing, "lodash"},
		{"node missing scoped", js, "Error", "Cannot find module '@scope/pkg/sub'", "", kindMissing, "@scope/pkg"},
		{"node missing package (ESM)", js, "Error", "Cannot find package 'chalk' imported from /code/main.mjs", "", kindMissing, "chalk"},
		{"node relative path", js, "Error", "Cannot find module './foo'", "", kindNone, ""},
		{"node builtin scheme", js, "Error", "Cannot find module 'node:nope'", "", kindNone, ""},
		{"node EAI_AGAIN", js, "Error", "getaddrinfo EAI_AGAIN example.com", "", kindOffline, ""},
		{"node ENOTFOUND", js, "Error", "getaddrinfo ENOTFOUND example.com", "", kindOffline, ""},
		{"node ECONNREFUSED", js, "Error", "connect ECONNREFUSED 127.0.0.1:80", "", kindOffline, ""},
		{"node ENETUNREACH", js, "Error", "connect ENETUNREACH 93.184.216.34:80 - Local (0.0.0.0:0)", "", kindOffline, ""},
		{"node fetch failed", js, "TypeError", "fetch failed", fetchFailed, kindOffline, ""},
		{"node fetch failed, cause before the bound", js, "TypeError", "fetch failed", fetchFailed + strings.Repeat("\n", maxTraceback), kindNone, ""},
		{"node other error", js, "TypeError", "x is not a function", "TypeError: x is not a function", kindNone, ""},
		{"bash", sandbox.Bash, "Error", "getaddrinfo EAI_AGAIN example.com", "", kindNone, ""},
		{"python rule in node", js, "ModuleNotFoundError", "No module named 'requests'", "", kindNone, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, module := rule(tt.lang, &sandbox.ExecError{Type: tt.typ, Message: tt.msg, Traceback: tt.traceback})
			if k != tt.kind || module != tt.module {
				t.Errorf("rule = %v, %q; want %v, %q", k, module, tt.kind, tt.module)
			}
		})
	}
}
