package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain lets a test start this test binary as the crucible command:
// with CRUCIBLE_TEST_MAIN=1 it runs main instead of the tests, so a test
// can drive the CLI through a real terminal without a second build.
//
// The tests' commands use a local socket of their own (CRUCIBLE_SOCKET in
// a temporary directory): a crucible serve a test starts never takes the
// host's, and no `crucible run` of a test goes to a server of the host.
func TestMain(m *testing.M) {
	if os.Getenv("CRUCIBLE_TEST_MAIN") == "1" {
		os.Args = append([]string{"crucible"}, os.Args[1:]...)
		main()
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "crucible-test-socket")
	if err != nil {
		panic(err)
	}
	os.Setenv(socketEnv, filepath.Join(dir, "serve.sock"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
