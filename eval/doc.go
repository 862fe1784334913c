// Package eval runs code-generation benchmarks in the HumanEval format:
// every sample is a model's completion of a problem, run with the problem's
// tests in a fresh sandbox, and the results are summarised as pass@k with
// the unbiased estimator.
//
// A sample passes only when the program prints a sentinel after the tests
// return: a random value made for each run and printed by code appended
// after the tests. Exiting early with status 0 (exit, os._exit), killing
// the interpreter, or a dangling decorator that would delete or replace
// the test function therefore all fail.
//
// What this cannot stop: the sample runs in the same interpreter as the
// tests, so code written to cheat can read the sentinel from its own
// program (its code constants, its source file) and print it, or return
// an object whose __eq__ is always true. No harness that runs the tests in
// the sample's process can prevent that; the sentinel guards against
// accidents and naive exits, not against a sample written to defeat it.
package eval
