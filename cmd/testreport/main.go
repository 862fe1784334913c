// Command testreport reads the output of `go test -json` on its standard
// input and writes what `go test` shows without -json (the failing
// tests' output, the "--- FAIL" lines, each package's "ok" or "FAIL"
// line, build errors), then every skipped test with the reason it gave,
// and the counts, in one line:
//
//	test: 512 passed, 0 failed, 3 skipped
//
// It exits 1 when a test or a package failed, or when a test skipped that
// the allow list does not permit to: scripts/test.sh runs after
// scripts/setup.sh, which meets every need a test has, so a skip there
// means a test that did not run although the run says it passed.
//
// Usage:
//
//	go test -json ./... | testreport [-allow FILE] [-name NAME] [-tally FILE]
//
// -allow names the allow list (see parseAllow), -name the word the
// summary starts with, -tally a file the counts are appended to, as
// "passed failed skipped unexpected", so that a script running go test
// several times can add them up.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	allowFile := flag.String("allow", "", "the allow list: tests that may skip, each with why")
	name := flag.String("name", "test", "the word the summary line starts with")
	tally := flag.String("tally", "", "a file to append the counts to (passed failed skipped unexpected)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "testreport: unexpected argument %q: it reads go test -json on its standard input\n", flag.Arg(0))
		os.Exit(2)
	}
	var allow []allowed
	if *allowFile != "" {
		f, err := os.Open(*allowFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
		allow, err = parseAllow(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "testreport: %s: %v\n", *allowFile, err)
			os.Exit(2)
		}
	}
	rp := newReport(os.Stdout, allow)
	if err := rp.read(os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "testreport: reading the test stream:", err)
		os.Exit(2)
	}
	rp.summary(*name)
	if *tally != "" {
		f, err := os.OpenFile(*tally, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			_, err = fmt.Fprintf(f, "%d %d %d %d\n", rp.passed, rp.failed, len(rp.skips), len(rp.unexpected()))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport: -tally:", err)
			os.Exit(2)
		}
	}
	if !rp.ok() {
		os.Exit(1)
	}
}
