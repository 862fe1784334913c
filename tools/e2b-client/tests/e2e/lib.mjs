// Shared by the scripts in this directory, which e2e/e2b_test.go runs with
// node against a real `crucible serve`: E2B_API_URL, E2B_SANDBOX_URL and
// E2B_API_KEY point E2B's official SDKs at Crucible's E2B-compatible API.
// Each script prints one JSON object, its last line on stdout, that the Go
// test checks: {"ok": true, ...what it saw} or {"ok": false, "thrown": ...}.

// describe turns a thrown value into what the Go test reads: the SDK's
// error class (AuthenticationError, TimeoutError, ...) and its message.
export function describe(e) {
  return {
    name: e?.name,
    class: e?.constructor?.name,
    message: String(e?.message ?? e),
    stack: String(e?.stack ?? ''),
  }
}

// attempt awaits promise and reports whether it threw, and what.
export async function attempt(promise) {
  try {
    const value = await promise
    return { threw: false, value }
  } catch (e) {
    return { threw: true, ...describe(e) }
  }
}

// main runs fn and prints its result (or what it threw) as the last line
// on stdout, then exits: the SDKs' keep-alive connections must not hold
// the process open.
export async function main(fn) {
  let out
  let code = 0
  try {
    out = { ok: true, ...(await fn()) }
  } catch (e) {
    out = { ok: false, thrown: describe(e) }
    code = 1
  }
  process.stdout.write(JSON.stringify(out) + '\n')
  process.exit(code)
}

// env returns the environment variable name, or throws naming it.
export function env(name) {
  const v = process.env[name]
  if (!v) throw new Error(`environment variable ${name} is not set`)
  return v
}

// execSummary is what the tests read of an Execution: its logs, main text,
// error and results (the PNGs as base64, as the SDK gives them).
export function execSummary(execution) {
  return {
    stdout: execution.logs.stdout.join(''),
    stderr: execution.logs.stderr.join(''),
    text: execution.text ?? null,
    error: execution.error
      ? { name: execution.error.name, value: execution.error.value, traceback: execution.error.traceback }
      : null,
    results: execution.results.map((r) => ({
      formats: r.formats(),
      isMainResult: r.isMainResult,
      text: r.text ?? null,
      png: r.png ?? null,
    })),
    executionCount: execution.executionCount ?? null,
  }
}
