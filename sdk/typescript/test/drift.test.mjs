// The OpenAPI drift check: src/openapi.ts must be what openapi-typescript
// makes of server/openapi.json now. A route or a type changed in the
// document without `npm run gen` fails this test (and `npm run
// check-drift`); the second test shows the check failing on a changed
// copy of the document.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const spec = path.resolve(root, '../../server/openapi.json');

/** gen runs scripts/gen.mjs with args and returns its exit code and output. */
function gen(...args) {
  return new Promise((resolve) => {
    execFile(process.execPath, [path.join(root, 'scripts/gen.mjs'), ...args], { cwd: root }, (err, stdout, stderr) => {
      resolve({ code: err ? err.code : 0, stdout, stderr });
    });
  });
}

test('src/openapi.ts matches server/openapi.json (npm run check-drift)', async () => {
  const r = await gen('--check');
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /check-drift: src\/openapi\.ts matches .*server\/openapi\.json/);
});

test('the drift check fails when a type or a route of the document changes', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'crucible-drift-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const doc = JSON.parse(await readFile(spec, 'utf8'));
  // The types as generated from the document now (what src/openapi.ts holds once in step).
  const out = path.join(dir, 'openapi.ts');
  assert.equal((await gen('--spec', spec, '--out', out)).code, 0);
  assert.equal((await gen('--check', '--spec', spec, '--out', out)).code, 0);

  // A type: Metrics.wall_ms becomes a string.
  const typeChanged = structuredClone(doc);
  typeChanged.components.schemas.Metrics.properties.wall_ms = { type: 'string' };
  await writeFile(path.join(dir, 'type.json'), JSON.stringify(typeChanged));
  const r1 = await gen('--check', '--spec', path.join(dir, 'type.json'), '--out', out);
  assert.equal(r1.code, 1);
  assert.match(r1.stderr, /check-drift: .*openapi\.ts is out of date with .*type\.json \(first difference at line \d+:/);
  assert.match(r1.stderr, /generated: ".*wall_ms: string;"/);
  assert.match(r1.stderr, /Regenerate it and commit the result: \(cd sdk\/typescript && npm run gen\)/);

  // A route: a new endpoint.
  const routeAdded = structuredClone(doc);
  routeAdded.paths['/v1/new-thing'] = { get: { operationId: 'newThing', responses: { 200: { description: 'ok' } } } };
  await writeFile(path.join(dir, 'route.json'), JSON.stringify(routeAdded));
  const r2 = await gen('--check', '--spec', path.join(dir, 'route.json'), '--out', out);
  assert.equal(r2.code, 1);
  assert.match(r2.stderr, /out of date/);
  assert.match(r2.stderr, /generated: ".*\/v1\/new-thing/);

  // Once regenerated from the changed document, the check passes on it.
  assert.equal((await gen('--spec', path.join(dir, 'type.json'), '--out', out)).code, 0);
  assert.equal((await gen('--check', '--spec', path.join(dir, 'type.json'), '--out', out)).code, 0);
  assert.match(await readFile(out, 'utf8'), /wall_ms: string;/);
});
