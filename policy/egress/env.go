package egress

import (
	"maps"
	"strconv"
)

// ProxyEnv returns a copy of env with the variables that send HTTP
// clients (Python's urllib and requests, curl, pip) to the proxy a
// sandbox reaches at 127.0.0.1:port; they replace any the request set,
// which could lead nowhere else. Node reads none of them: a JavaScript
// program must use the proxy itself.
func ProxyEnv(env map[string]string, port int) map[string]string {
	out := maps.Clone(env)
	if out == nil {
		out = map[string]string{}
	}
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
		out[k] = url
	}
	out["NO_PROXY"], out["no_proxy"] = "", ""
	return out
}
