// The control plane through E2B's official SDK: create, runCode, info,
// list, setTimeout, connect, kill; two tenants kept apart; a wrong key
// refused; a sandbox whose timeout passes gone. Run by e2bapi's
// TestSDKControlPlane with E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY (tenant
// A) and OTHER_KEY (tenant B) set; it prints one JSON object of what it saw.
import { Sandbox } from '@e2b/code-interpreter'

const out = {}
const other = { apiKey: process.env.OTHER_KEY }

// caught runs fn and returns what it threw: its class and message.
async function caught(fn) {
  try {
    return { returned: await fn() }
  } catch (err) {
    return { name: err.constructor.name, message: String(err.message) }
  }
}

const t0 = performance.now()
const sbx = await Sandbox.create()
const exec = await sbx.runCode('print(1)')
out.firstRunMs = performance.now() - t0
out.sandboxId = sbx.sandboxId
out.stdout = exec.logs.stdout.join('')
const info = await sbx.getInfo()
out.info = { templateId: info.templateId, state: info.state, lifeS: Math.round((info.endAt - info.startedAt) / 1000) }
out.listed = (await Sandbox.list().nextItems()).map((s) => s.sandboxId)
out.running = await sbx.isRunning()
await sbx.setTimeout(120_000)
out.lifeAfterSetTimeoutS = Math.round(((await sbx.getInfo()).endAt - Date.now()) / 1000)
const again = await Sandbox.connect(sbx.sandboxId)
out.connectedRun = (await again.runCode('print(2)')).logs.stdout.join('')

// Tenant B sees nothing of A's sandbox, by the control plane or the data plane.
const b = await Sandbox.create(other)
out.otherListed = (await Sandbox.list(other).nextItems()).map((s) => s.sandboxId)
out.otherInfo = await caught(() => Sandbox.getInfo(sbx.sandboxId, other))
out.otherKill = await caught(() => Sandbox.kill(sbx.sandboxId, other))
out.otherConnect = await caught(() => Sandbox.connect(sbx.sandboxId, other))
const forged = new Sandbox({ ...b.connectionConfig, sandboxId: sbx.sandboxId, envdAccessToken: b.envdAccessToken,
  trafficAccessToken: b.trafficAccessToken, envdVersion: '0.5.7' })
out.otherRunCode = await caught(() => forged.runCode('print("reached")'))
out.otherRead = await caught(() => forged.files.read('/home/user/x.txt'))
out.stillRunning = await sbx.isRunning()

// What a Crucible sandbox cannot do is refused, saying so.
out.pause = await caught(() => sbx.pause())
out.metrics = await caught(() => sbx.getMetrics())

// A wrong key is refused.
out.wrongKey = await caught(() => Sandbox.create({ apiKey: 'e2b_' + '0'.repeat(64) }))

// kill, then the sandbox is gone.
out.killed = await sbx.kill()
out.runningAfterKill = await sbx.isRunning()
out.killAgain = await Sandbox.kill(sbx.sandboxId)
out.infoAfterKill = await caught(() => Sandbox.getInfo(sbx.sandboxId))
await b.kill()

// A sandbox whose timeout passes is gone.
const short = await Sandbox.create({ timeoutMs: 1000 })
await new Promise((resolve) => setTimeout(resolve, 2500))
out.expiredRunning = await short.isRunning()
out.expiredInfo = await caught(() => Sandbox.getInfo(short.sandboxId))

// The round trip of runCode on a live sandbox, and create+run+kill.
const live = await Sandbox.create()
await live.runCode('1')
const n = 20
let t = performance.now()
for (let i = 0; i < n; i++) await live.runCode('1')
out.runCodeMs = (performance.now() - t) / n
await live.kill()
t = performance.now()
const c = await Sandbox.create()
await c.runCode('print(1)')
await c.kill()
out.createRunKillMs = performance.now() - t

// A refused runCode leaves the SDK's request timer running: exit now.
console.log(JSON.stringify(out))
process.exit(0)
