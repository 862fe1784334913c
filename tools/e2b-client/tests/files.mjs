// envd's files through E2B's official SDK: write and read text and bytes
// (multipart and octet-stream), several files at once, relative paths,
// the code's view of them, and refusals. Run by e2bapi's TestSDKFiles; it
// prints one JSON object of what it saw.
import { Sandbox } from 'e2b'

const out = {}

async function caught(fn) {
  try {
    return { returned: await fn() }
  } catch (err) {
    return { name: err.constructor.name, message: String(err.message) }
  }
}

const sbx = await Sandbox.create()
out.written = await sbx.files.write('/home/user/notes/a.txt', 'hello\n')
out.text = await sbx.files.read('/home/user/notes/a.txt')
const bytes = new Uint8Array(256).map((_, i) => i)
await sbx.files.write('/home/user/b.bin', bytes, { useOctetStream: true })
out.bytesEqual = Buffer.from(await sbx.files.read('/home/user/b.bin', { format: 'bytes' })).equals(Buffer.from(bytes))
out.many = await sbx.files.write([{ path: '/home/user/x/1.txt', data: 'one' }, { path: 'x/2.txt', data: 'two' }])
out.relative = await sbx.files.read('/home/user/x/2.txt')
out.relativeRead = await sbx.files.read('notes/a.txt')
out.missing = await caught(() => sbx.files.read('/home/user/none.txt'))
out.outside = await caught(() => sbx.files.write('/etc/passwd', 'x'))
out.escape = await caught(() => sbx.files.read('../../etc/passwd'))
out.dirRead = await caught(() => sbx.files.read('/home/user/notes'))
out.list = await caught(() => sbx.files.list('/home/user'))
out.running = await sbx.isRunning()
await sbx.kill()
out.afterKill = await caught(() => sbx.files.read('/home/user/notes/a.txt'))
console.log(JSON.stringify(out))
process.exit(0)
