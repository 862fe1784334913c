package sandbox

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
)

func TestNetworkJSON(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Network
		out     string // marshalled again
		wantErr string // from Validate, or from Unmarshal when unmarshal is set
		decode  bool   // the error comes from decoding
	}{
		{name: "none", in: `"none"`, out: `"none"`},
		{name: "empty string", in: `""`, out: `"none"`},
		{name: "null", in: `null`, out: `"none"`},
		{name: "allow", in: `{"allow":["example.org","*.github.com:443"]}`, want: Network{Allow: []string{"example.org", "*.github.com:443"}},
			out: `{"allow":["example.org","*.github.com:443"]}`},
		{name: "caps", in: `{"allow":["203.0.113.0/24"],"max_connections":3,"max_bytes":100}`,
			want: Network{Allow: []string{"203.0.113.0/24"}, MaxConnections: 3, MaxBytes: 100},
			out:  `{"allow":["203.0.113.0/24"],"max_connections":3,"max_bytes":100}`},
		{name: "other string", in: `"host"`, out: `"host"`, wantErr: `network: must be "none" or an object`},
		{name: "unknown member", in: `{"allow":["a.org"],"deny":["b.org"]}`, wantErr: "deny", decode: true},
		{name: "empty allow", in: `{"allow":[]}`, out: `"none"`},
		{name: "caps without allow", in: `{"allow":[],"max_bytes":5}`, out: `{"allow":[],"max_bytes":5}`, wantErr: "network.allow: must list at least one"},
		{name: "bad entry named by index", in: `{"allow":["a.org","b.org","x y"]}`, out: `{"allow":["a.org","b.org","x y"]}`, wantErr: `network.allow[2]: must be a host name`},
		{name: "negative cap", in: `{"allow":["a.org"],"max_connections":-1}`, out: `{"allow":["a.org"],"max_connections":-1}`, wantErr: "network.max_connections: must be between"},
		{name: "huge byte cap", in: `{"allow":["a.org"],"max_bytes":1e12}`, wantErr: "number", decode: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n Network
			err := json.Unmarshal([]byte(tt.in), &n)
			if tt.decode {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Unmarshal(%s) = %v, want an error containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Unmarshal(%s): %v", tt.in, err)
			}
			out, err := json.Marshal(n)
			if err != nil || string(out) != tt.out {
				t.Errorf("Marshal = %s, %v; want %s", out, err, tt.out)
			}
			err = n.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				if tt.want.Allow != nil && strings.Join(n.Allow, ",") != strings.Join(tt.want.Allow, ",") ||
					n.MaxBytes != tt.want.MaxBytes || n.MaxConnections != tt.want.MaxConnections {
					t.Errorf("got %+v, want %+v", n, tt.want)
				}
				return
			}
			if err == nil || !IsInputError(err) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Validate = %v, want an input error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestRequestOmitsNoNetwork(t *testing.T) {
	b, err := json.Marshal(Request{Language: Python, Code: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "network") {
		t.Errorf("a request without network marshals as %s: want no network member, as before", b)
	}
}

func TestParseNetworkRule(t *testing.T) {
	tests := []struct {
		in      string
		want    NetworkRule
		wantErr string
	}{
		{in: "Example.ORG.", want: NetworkRule{Name: "example.org"}},
		{in: "*.github.com:443", want: NetworkRule{Name: "github.com", Wildcard: true, Port: 443}},
		{in: "203.0.113.7", want: NetworkRule{Prefix: netip.MustParsePrefix("203.0.113.7/32")}},
		{in: "198.51.100.7:8080", want: NetworkRule{Prefix: netip.MustParsePrefix("198.51.100.7/32"), Port: 8080}},
		{in: "203.0.113.0/24", want: NetworkRule{Prefix: netip.MustParsePrefix("203.0.113.0/24")}},
		{in: "203.0.113.0/24:22", want: NetworkRule{Prefix: netip.MustParsePrefix("203.0.113.0/24"), Port: 22}},
		{in: "2001:db8::1", want: NetworkRule{Prefix: netip.MustParsePrefix("2001:db8::1/128")}},
		{in: "[2001:db8::1]:443", want: NetworkRule{Prefix: netip.MustParsePrefix("2001:db8::1/128"), Port: 443}},
		{in: "", wantErr: "must not be empty"},
		{in: "a.org:0", wantErr: "port"},
		{in: "a.org:65536", wantErr: "port"},
		{in: "a.org:08", wantErr: "port"},
		{in: "a.org:http", wantErr: "port"},
		{in: "203.0.113.1/24", wantErr: "no bits set past its length (203.0.113.0/24)"},
		{in: "300.0.0.0/8", wantErr: "prefix"},
		{in: "-a.org", wantErr: "host name"},
		{in: "a_b.org", wantErr: "host name"},
		{in: "*.", wantErr: "host name"},
		{in: "*", wantErr: "host name"},
		{in: "a.*.org", wantErr: "host name"},
		{in: "[2001:db8::1", wantErr: "bracketed"},
		{in: "fe80::1%eth0", wantErr: "no zone"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseNetworkRule(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseNetworkRule(%q) = %+v, %v; want an error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseNetworkRule(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
		})
	}
}

// TestCheckAllowEntry: an entry that can never be reached is refused when
// it is given, naming why in the egress proxy's words; a URL is refused
// with the host to give instead.
func TestCheckAllowEntry(t *testing.T) {
	tests := []struct {
		in      string
		wantErr string // "" for accepted
	}{
		{"example.org", ""},
		{"*.github.com:443", ""},
		{"203.0.113.7:8080", ""},
		{"0.0.0.0/0", ""}, // holds public addresses: the proxy refuses the others
		{"::/0", ""},
		{"10.0.0.0/7", ""}, // 11.0.0.0/8 is public
		{"localhost.example.org", ""},
		{"127.0.0.1:28411", "127.0.0.1 is a loopback address: never reachable"},
		{"[::1]:80", "::1 is a loopback address: never reachable"},
		{"::ffff:127.0.0.1", "127.0.0.1 is a loopback address: never reachable"},
		{"10.1.2.3", "10.1.2.3 is a private address (RFC 1918): never reachable"},
		{"192.168.0.0/24", "every address of 192.168.0.0/24 is a private address (RFC 1918): never reachable"},
		{"::ffff:10.0.0.0/104", "every address of 10.0.0.0/8 is a private address (RFC 1918): never reachable"},
		{"169.254.169.254", "169.254.169.254 is the cloud metadata address: never reachable"},
		{"169.254.1.1:80", "169.254.1.1 is a link-local address: never reachable"},
		{"fe80::/64", "is a link-local address: never reachable"},
		{"0.0.0.0", "0.0.0.0 is an unspecified (\"this network\") address: never reachable"},
		{"[::]:443", ":: is the unspecified address: never reachable"},
		{"224.0.0.251", "multicast"},
		{"localhost:8000", "localhost always resolves to a loopback address: never reachable"},
		{"LOCALHOST.", "localhost always resolves to a loopback address"},
		{"*.localhost", "localhost always resolves to a loopback address"},
		{"api.localhost", "api.localhost always resolves to a loopback address"},
		{"metadata.google.internal", "the cloud metadata address: never reachable"},
		{"https://example.com/x", `give a host, not a URL: "example.com"`},
		{"http://example.com:8080/", `give a host, not a URL: "example.com:8080"`},
		{"https://user:secret@example.com", `give a host, not a URL: "example.com"`},
		{"example.com/data.csv", `give a host, not a URL: "example.com"`},
		{"https://", "give a host, not a URL"},
		{"ftp://bad host/", "give a host, not a URL"},
		{"300.0.0.0/8", "address prefix"},
		{"203.0.113.0/24:22", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := CheckAllowEntry(tt.in)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("CheckAllowEntry(%q) = %v, want it accepted", tt.in, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("CheckAllowEntry(%q) = %v, want an error containing %q", tt.in, err, tt.wantErr)
			}
		})
	}
	// Validate names the entry by its index, with the reason and the
	// entry given.
	err := Network{Allow: []string{"example.org", "127.0.0.1:28411"}}.Validate()
	want := `invalid request: network.allow[1]: 127.0.0.1 is a loopback address: never reachable (the egress proxy refuses it whatever the allowlist says), got "127.0.0.1:28411"`
	if err == nil || err.Error() != want {
		t.Errorf("Validate = %v\nwant %s", err, want)
	}
}

func TestNetworkRuleMatch(t *testing.T) {
	tests := []struct {
		rule string
		host string // a name, or an address
		port int
		want bool
	}{
		{"example.org", "example.org", 80, true},
		{"example.org", "EXAMPLE.org.", 443, true},
		{"example.org", "example.org", 8080, false},
		{"example.org", "www.example.org", 443, false},
		{"example.org:8080", "example.org", 8080, true},
		{"example.org:8080", "example.org", 443, false},
		{"*.github.com:443", "api.github.com", 443, true},
		{"*.github.com:443", "a.b.github.com", 443, true},
		{"*.github.com:443", "github.com", 443, false},
		{"*.github.com:443", "evilgithub.com", 443, false},
		{"*.github.com:443", "api.github.com", 80, false},
		{"203.0.113.0/24", "203.0.113.9", 80, true},
		{"203.0.113.0/24", "203.0.114.9", 80, false},
		{"203.0.113.0/24", "::ffff:203.0.113.9", 443, true},
		{"203.0.113.0/24", "203.0.113.9", 22, false},
		{"203.0.113.0/24", "example.org", 80, false},
		{"example.org", "203.0.113.9", 80, false},
	}
	for _, tt := range tests {
		t.Run(tt.rule+" "+tt.host, func(t *testing.T) {
			r, err := ParseNetworkRule(tt.rule)
			if err != nil {
				t.Fatal(err)
			}
			var got bool
			if a, err := netip.ParseAddr(tt.host); err == nil {
				got = r.MatchAddr(a, tt.port)
			} else {
				got = r.MatchName(tt.host, tt.port)
			}
			if got != tt.want {
				t.Errorf("%q admits %s:%d = %v, want %v", tt.rule, tt.host, tt.port, got, tt.want)
			}
		})
	}
}
