// The code interpreter through E2B's official SDK: the seed's flow (write
// a CSV, runCode a pandas program that prints the shape and draws a
// chart, read the PNG result), streamed output, an error with its
// traceback, variables kept between runCode calls, a DataFrame's HTML, a
// cell past its time, refusals, code contexts. Run by e2bapi's
// TestSDKInterpreter; it prints one JSON object of what it saw.
import { Sandbox } from '@e2b/code-interpreter'

const out = {}

async function caught(fn) {
  try {
    return { returned: await fn() }
  } catch (err) {
    return { name: err.constructor.name, message: String(err.message) }
  }
}

const sbx = await Sandbox.create()

// The seed's flow.
const csv = 'region,sales\nnorth,10\nsouth,25\neast,7\nwest,12\n'
await sbx.files.write('/home/user/data.csv', csv)
const analysis = await sbx.runCode(`
import pandas as pd
import matplotlib.pyplot as plt
df = pd.read_csv("/home/user/data.csv")
print(df.shape)
df.plot.bar(x="region", y="sales")
plt.title("sales by region")
plt.show()
`)
out.seed = {
  stdout: analysis.logs.stdout.join(''),
  error: analysis.error ?? null,
  pngs: analysis.results.filter((r) => r.png).map((r) => r.png),
  executionCount: analysis.executionCount,
}

// A chart saved to a file is a PNG result too (as in a notebook, where the
// saved figure is still shown), and the file is there.
const saved = await sbx.runCode('import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.savefig("chart.png")')
const file = Buffer.from(await sbx.files.read('/home/user/chart.png', { format: 'bytes' }))
out.saved = { pngs: saved.results.filter((r) => r.png).length, sameAsFile: saved.results.some((r) => r.png && Buffer.from(r.png, 'base64').equals(file)) }

// Output streamed as the cell runs: the first line arrives long before
// the last.
const arrivals = []
const streamed = await sbx.runCode('import time, sys\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.4)\nprint("warn", file=sys.stderr)', {
  onStdout: (m) => arrivals.push({ line: m.line, at: Date.now() }),
})
out.streamed = { stdout: streamed.logs.stdout.join(''), stderr: streamed.logs.stderr.join(''), arrivals }

// An error with its traceback.
const failed = await sbx.runCode('def f():\n    return 1 / 0\nf()')
out.error = failed.error

// Variables persist.
await sbx.runCode('x = 5')
const x = await sbx.runCode('x')
out.value = { text: x.text, count: x.executionCount }

// A DataFrame's table.
const table = await sbx.runCode('df')
out.table = { text: table.text, html: table.results.find((r) => r.isMainResult)?.html ?? '' }

// A cell past the SDK's timeout ends the call; the sandbox goes on.
out.timeout = await caught(() => sbx.runCode('while True: pass', { timeoutMs: 2000 }))
out.afterTimeout = (await sbx.runCode('print("alive")')).logs.stdout.join('')

// Refusals the SDK shows as the cell's error.
out.language = (await sbx.runCode('1', { language: 'r' })).error
out.envs = (await sbx.runCode('1', { envs: { A: 'b' } })).error

// Contexts: each has variables of its own; a restart empties one; a
// removed one is no longer listed.
const ctx = await sbx.createCodeContext()
out.contexts = (await sbx.listCodeContexts()).map((c) => c.id)
await sbx.runCode('y = "in ctx"', { context: ctx })
out.inContext = (await sbx.runCode('y', { context: ctx })).text
out.defaultSeesY = (await sbx.runCode('y')).error?.name ?? 'no error'
out.contextSeesX = (await sbx.runCode('x', { context: ctx })).error?.name ?? 'no error'
await sbx.restartCodeContext(ctx)
out.afterRestart = (await sbx.runCode('y', { context: ctx })).error?.name ?? 'no error'
out.defaultAfterRestart = (await sbx.runCode('x')).text
await sbx.removeCodeContext(ctx)
out.contextsAfter = (await sbx.listCodeContexts()).map((c) => c.id)
out.removedRun = await caught(() => sbx.runCode('1', { context: ctx }))
out.unknownContext = await caught(() => sbx.runCode('1', { context: { id: 'nope', language: 'python', cwd: '/home/user' } }))

await sbx.kill()
out.afterKill = await caught(() => sbx.runCode('1'))
console.log(JSON.stringify(out))
process.exit(0)
