package egress_test

import (
	"maps"
	"testing"

	"github.com/crucible-sandbox/crucible/policy/egress"
)

func TestProxyEnv(t *testing.T) {
	proxied := func(extra map[string]string) map[string]string {
		want := map[string]string{"NO_PROXY": "", "no_proxy": ""}
		for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
			want[k] = "http://127.0.0.1:4321"
		}
		maps.Copy(want, extra)
		return want
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want map[string]string
	}{
		{"no environment", nil, proxied(nil)},
		{"the request's variables kept", map[string]string{"A": "1"}, proxied(map[string]string{"A": "1"})},
		{"the request's proxy replaced", map[string]string{"https_proxy": "http://elsewhere:1", "NO_PROXY": "*"}, proxied(nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := maps.Clone(tc.env)
			got := egress.ProxyEnv(tc.env, 4321)
			if !maps.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if !maps.Equal(tc.env, before) {
				t.Errorf("the request's map was changed: %v, was %v", tc.env, before)
			}
		})
	}
}
