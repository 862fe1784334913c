// Two tenants through E2B's SDK against Crucible: tenant A (TENANT_A_KEY)
// holds a sandbox with a secret in its kernel and in a file; tenant B
// (TENANT_B_KEY), knowing the sandbox's id, tries what the SDK offers:
// getInfo, kill, connect, list, and the sandbox's own daemon and code
// interpreter (an SDK Sandbox object forged with A's id, carrying B's own
// sandbox's access token, or none, or B's API key). Every attempt must
// fail; A's sandbox must be untouched and still running.
import { Sandbox } from '@e2b/code-interpreter'
import { attempt, env, main } from './lib.mjs'

const keyA = env('TENANT_A_KEY')
const keyB = env('TENANT_B_KEY')

function failed(r) {
  return r.threw ? { threw: true, name: r.name, class: r.class, message: r.message } : { threw: false, value: r.value }
}

// reach tries tenant A's sandbox through sandbox, an SDK object that names
// A's sandbox but holds other credentials.
async function reach(sandbox) {
  return {
    runCode: failed(await attempt(sandbox.runCode('print(secret_a); leaked = True').then((e) => ({ stdout: e.logs.stdout.join(''), error: e.error?.name ?? null })))),
    read: failed(await attempt(sandbox.files.read('/home/user/a.txt'))),
    write: failed(await attempt(sandbox.files.write('/home/user/pwned.txt', 'from b'))),
    command: failed(await attempt(sandbox.commands.run('cat /home/user/a.txt').then((r) => ({ stdout: r.stdout, exitCode: r.exitCode })))),
    contexts: failed(await attempt(sandbox.listCodeContexts().then((l) => l.map((c) => c.id))))
  }
}

main(async () => {
  const a = await Sandbox.create({ apiKey: keyA, timeoutMs: 60_000 })
  let b
  try {
    await a.runCode('secret_a = "tenant-a-secret"')
    await a.files.write('/home/user/a.txt', 'tenant-a-file')
    b = await Sandbox.create({ apiKey: keyB, timeoutMs: 60_000 })

    const bInfo = failed(await attempt(Sandbox.getInfo(a.sandboxId, { apiKey: keyB })))
    const bKill = failed(await attempt(Sandbox.kill(a.sandboxId, { apiKey: keyB })))
    const bConnect = failed(await attempt(Sandbox.connect(a.sandboxId, { apiKey: keyB })))
    const bTimeout = failed(await attempt(Sandbox.setTimeout(a.sandboxId, 1000, { apiKey: keyB })))
    const bList = (await Sandbox.list({ apiKey: keyB }).nextItems()).map((s) => s.sandboxId)
    const aList = (await Sandbox.list({ apiKey: keyA }).nextItems()).map((s) => s.sandboxId)

    const forge = (extra) => new Sandbox({ sandboxId: a.sandboxId, envdVersion: b.envdVersion ?? '0.5.7', apiKey: keyB, ...extra })
    const withBToken = await reach(forge({ envdAccessToken: b.envdAccessToken }))
    const withNoToken = await reach(forge({}))
    const withBKey = await reach(forge({ headers: { 'X-API-Key': keyB, Authorization: `Bearer ${keyB}` } }))

    // Tenant B's own sandbox is another place: A's file is not in it.
    const bReadsOwn = failed(await attempt(b.files.read('/home/user/a.txt')))

    // A's sandbox afterwards: alive, its secret kept, nothing of B's.
    const aInfo = await a.getInfo()
    const aCheck = await a.runCode('print(secret_a); print("leaked" in globals())')
    const aPwned = !(await attempt(a.files.read('/home/user/pwned.txt'))).threw
    return {
      a: { id: a.sandboxId, hasAccessToken: Boolean(a.envdAccessToken), state: aInfo.state, after: aCheck.logs.stdout.join(''), pwnedExists: aPwned },
      b: { id: b.sandboxId, hasAccessToken: Boolean(b.envdAccessToken) },
      bInfo, bKill, bConnect, bTimeout, bList, aList, withBToken, withNoToken, withBKey, bReadsOwn,
    }
  } finally {
    await a.kill()
    if (b) await b.kill()
  }
})
