package main

import (
	"os"
	"testing"
)

// TestMain lets a test start this test binary as the crucible command:
// with CRUCIBLE_TEST_MAIN=1 it runs main instead of the tests, so a test
// can drive the CLI through a real terminal without a second build.
func TestMain(m *testing.M) {
	if os.Getenv("CRUCIBLE_TEST_MAIN") == "1" {
		os.Args = append([]string{"crucible"}, os.Args[1:]...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}
