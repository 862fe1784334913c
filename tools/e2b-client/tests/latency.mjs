// What E2B's SDK costs against Crucible: Sandbox.create() + runCode('print(1)')
// + kill(), each after a pause that lets the server refill its warm
// sessions, and the round trip of runCode('1') on a live sandbox. Run by
// e2bapi's TestSDKLatency; it prints one JSON object of milliseconds.
import { Sandbox } from '@e2b/code-interpreter'

const pause = Number(process.env.PAUSE_MS ?? 1500)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const out = { createRunKillMs: [], createMs: [], firstRunMs: [], killMs: [], runCodeMs: [] }

await (await Sandbox.create()).kill() // the first connection and the SDK's first use
for (let i = 0; i < 5; i++) {
  await sleep(pause)
  const t = performance.now()
  const sbx = await Sandbox.create()
  const created = performance.now()
  const exec = await sbx.runCode('print(1)')
  const ran = performance.now()
  await sbx.kill()
  const end = performance.now()
  out.createRunKillMs.push(end - t)
  out.createMs.push(created - t)
  out.firstRunMs.push(ran - created)
  out.killMs.push(end - ran)
  if (exec.logs.stdout.join('') !== '1\n') throw new Error('print(1) printed ' + JSON.stringify(exec.logs))
}
const live = await Sandbox.create()
await live.runCode('1')
for (let i = 0; i < 30; i++) {
  const t = performance.now()
  await live.runCode('1')
  out.runCodeMs.push(performance.now() - t)
}
await live.kill()
console.log(JSON.stringify(out))
process.exit(0)
