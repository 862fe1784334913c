// The seed's run_code_in_sandbox, in JavaScript with E2B's official
// @e2b/code-interpreter, unchanged but for the environment: E2B_API_URL,
// E2B_SANDBOX_URL and E2B_API_KEY name a Crucible server and a key. It
// creates a sandbox, writes a CSV to /home/user/data.csv, runs a pandas
// program that prints the shape and shows a matplotlib chart, reads the
// logs, the main text, the error and the PNG results, and kills the
// sandbox; then asks for the sandbox again (it must be gone).
import { Sandbox } from '@e2b/code-interpreter'
import { attempt, execSummary, main } from './lib.mjs'

const csv = `product,region,revenue
widget,north,120.5
widget,south,98.0
gadget,north,310.25
gadget,south,287.75
doohickey,north,45.0
doohickey,south,52.5
`

const code = `
import pandas as pd
import matplotlib.pyplot as plt
df = pd.read_csv('/home/user/data.csv')
print(f"Shape: {df.shape}")
print(f"Columns: {list(df.columns)}")
print(df.describe().to_string())
df.groupby('product')['revenue'].sum().plot(kind='bar', title='Revenue by product')
plt.show()
round(df['revenue'].sum(), 2)
`

async function runCodeInSandbox(code, timeoutMs = 60_000) {
  const sandbox = await Sandbox.create({ timeoutMs })
  try {
    await sandbox.files.write('/home/user/data.csv', csv)
    const execution = await sandbox.runCode(code)
    return {
      sandboxId: sandbox.sandboxId,
      success: !execution.error,
      stdout: execution.logs.stdout.join(''),
      text: execution.text ?? null,
      stderr: execution.error ? execution.error.value : '',
      charts: execution.results.filter((r) => r.png).map((r) => r.png),
      execution: execSummary(execution),
    }
  } finally {
    await sandbox.kill()
  }
}

main(async () => {
  const started = Date.now()
  const result = await runCodeInSandbox(code)
  const ms = Date.now() - started
  // After kill: the API must not know the sandbox any more.
  const after = await attempt(Sandbox.getInfo(result.sandboxId))
  return { ...result, ms, afterKill: after.threw ? { threw: true, name: after.name, class: after.class, message: after.message } : { threw: false, state: after.value?.state } }
})
