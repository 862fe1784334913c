// Package eval runs code-generation benchmarks in the HumanEval format:
// every sample is a model's completion of a problem, run with the problem's
// tests in a fresh sandbox, and the results are summarised as pass@k with
// the unbiased estimator.
//
// A sample passes only when the program prints a sentinel after the tests
// return: a random value the sample cannot know in advance, printed by code
// appended after the tests. Exiting early with status 0, killing the
// interpreter, or deleting the test function therefore all fail.
package eval
