package cluster

import (
	"strings"
	"testing"
)

// TestConfigCheck: a bad Config is refused naming what is wrong.
func TestConfigCheck(t *testing.T) {
	ok := Config{URL: "nats://127.0.0.1:4222", NodeID: "node-1", Advertise: "http://10.0.0.2:8080"}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // "" for valid
	}{
		{"valid", func(*Config) {}, ""},
		{"several URLs", func(c *Config) { c.URL = "nats://a:4222, nats://tok@b:4222" }, ""},
		{"no URL", func(c *Config) { c.URL = "" }, "URL is required"},
		{"http URL", func(c *Config) { c.URL = "http://127.0.0.1:4222" }, "must be nats://"},
		{"empty node id", func(c *Config) { c.NodeID = "" }, "node id"},
		{"node id with a space", func(c *Config) { c.NodeID = "a b" }, "node id \"a b\""},
		{"node id with a star", func(c *Config) { c.NodeID = "a*" }, "node id"},
		{"node id ending with a dot", func(c *Config) { c.NodeID = "a." }, "node id"},
		{"advertise without scheme", func(c *Config) { c.Advertise = "10.0.0.2:8080" }, "advertise URL"},
		{"advertise with a path", func(c *Config) { c.Advertise = "http://h:1/api" }, "advertise URL"},
		{"advertise with credentials", func(c *Config) { c.Advertise = "http://u:p@h:1" }, "advertise URL"},
		{"embedded on loopback", func(c *Config) { c.URL, c.DataDir = Embedded, "/tmp/x" }, ""},
		{"embedded without a store", func(c *Config) { c.URL = Embedded }, "data directory"},
		{"embedded beyond loopback without a token", func(c *Config) { c.URL, c.DataDir, c.Listen = Embedded, "/tmp/x", "0.0.0.0:4222" }, "a token is required"},
		{"embedded beyond loopback with a token", func(c *Config) {
			c.URL, c.DataDir, c.Listen, c.Token = Embedded, "/tmp/x", "0.0.0.0:4222", "s3cret"
		}, ""},
		{"embedded listen without a port", func(c *Config) { c.URL, c.DataDir, c.Listen = Embedded, "/tmp/x", "127.0.0.1" }, "listen address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			_, err := c.check()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("err %v, want one saying %q", err, tc.want)
			}
		})
	}
}
