// The package's shape: ESM, Node >= 18, no runtime dependency, and a
// build that imports nothing but its own files (no node: module, no
// package), so that it runs in browsers with fetch only.
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

test('package.json: ESM, Node >= 18, no runtime dependencies, pinned development packages', async () => {
  const pkg = JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8'));
  assert.equal(pkg.type, 'module');
  assert.equal(pkg.engines.node, '>=18');
  assert.equal(pkg.dependencies, undefined);
  assert.equal(pkg.peerDependencies, undefined);
  for (const [name, version] of Object.entries(pkg.devDependencies)) assert.match(version, /^\d+\.\d+\.\d+$/, `${name} is pinned`);
  assert.equal(pkg.exports['.'].import, './dist/index.js');
});

test('dist imports only its own files, and reads process only where it exists', async () => {
  const files = (await readdir(path.join(root, 'dist'))).filter((f) => f.endsWith('.js'));
  assert.ok(files.includes('index.js'));
  let imports = 0;
  for (const f of files) {
    const src = await readFile(path.join(root, 'dist', f), 'utf8');
    for (const m of src.matchAll(/(?:^|\s)(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]/g)) {
      const spec = m[1] ?? m[2];
      assert.match(spec, /^\.\/[a-z]+\.js$/, `${f} imports ${spec}`);
      imports++;
    }
    for (const m of src.matchAll(/\bprocess\b/g)) assert.equal(src.slice(m.index - 11, m.index), 'globalThis.', `${f}: a bare process`);
    assert.doesNotMatch(src, /\brequire\(|\bBuffer\b|__dirname/, f);
  }
  assert.ok(imports > 20, `the imports were read (${imports})`);
});
