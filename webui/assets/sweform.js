// sweform.js: the form that starts a software-engineering agent run
// (POST /v1/agent-runs, mode "swe") from a repository archive the user
// chooses: a tar, a gzip'd tar or a git bundle, sent as base64 (the server
// unpacks it in a sandbox, never on its disk), with the task, the tests
// that must pass and the test command. The model is the server's.

import { request } from './api.js';
import { h } from './dom.js';

/** MAX_REPO is swe.MaxRepoBytes: the server refuses a larger archive. */
const MAX_REPO = 64 << 20;

/** repoFormat is the format an archive's name says, or '' for a name the server would not take. */
function repoFormat(name) {
  const n = name.toLowerCase();
  if (n.endsWith('.bundle')) return 'bundle';
  if (n.endsWith('.tar') || n.endsWith('.tar.gz') || n.endsWith('.tgz')) return 'tar';
  return '';
}

/** base64 encodes bytes, a chunk at a time (one call per byte would overflow the stack). */
function base64(bytes) {
  let bin = '';
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

/** sweForm returns the form; a started run opens at #/agent-runs/ID. */
export function sweForm() {
  const repo = h('input', { id: 'swe-repo', name: 'repo', type: 'file', accept: '.tar,.tar.gz,.tgz,.bundle', 'aria-describedby': 'swe-error' });
  const task = h('textarea', { id: 'swe-task', name: 'task', rows: '3', placeholder: 'fix the failing test in tests/test_x.py' });
  const tests = h('textarea', { id: 'swe-tests', name: 'tests', rows: '2', placeholder: 'tests/test_x.py::test_y' });
  const cmd = h('input', { id: 'swe-test-cmd', name: 'test_command', type: 'text', placeholder: 'python3 -m pytest -q' });
  const error = h('p', { id: 'swe-error', class: 'form-error', role: 'alert' });
  const start = h('button', { type: 'submit', class: 'primary', text: 'Start' });
  const form = h('form', { class: 'swe-form', novalidate: true, 'aria-label': 'Start a software-engineering run' },
    h('label', { for: 'swe-repo', text: 'Repository: a .tar, .tar.gz, .tgz or git .bundle' }), repo,
    h('label', { for: 'swe-task', text: 'Task' }), task,
    h('label', { for: 'swe-tests', text: 'Tests that must pass, one a line (optional)' }), tests,
    h('label', { for: 'swe-test-cmd', text: 'Test command (optional)' }), cmd,
    error, h('div', { class: 'row' }, start));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    error.textContent = '';
    const file = repo.files[0];
    const fail = (field, msg) => {
      error.textContent = msg;
      field.setAttribute('aria-invalid', 'true');
      field.focus();
    };
    for (const f of [repo, task]) f.removeAttribute('aria-invalid');
    if (!file) return fail(repo, 'Choose the repository: a .tar, .tar.gz, .tgz or .bundle file.');
    const format = repoFormat(file.name);
    if (!format) return fail(repo, `${file.name} is not a .tar, .tar.gz, .tgz or .bundle file.`);
    if (file.size > MAX_REPO) return fail(repo, `${file.name} is over the limit of 64 MiB.`);
    if (!task.value.trim()) return fail(task, 'Say what to change, such as: fix the failing test in tests/test_x.py.');
    start.disabled = true;
    try {
      const archive = base64(new Uint8Array(await file.arrayBuffer()));
      const names = tests.value.split('\n').map((s) => s.trim()).filter(Boolean);
      const resp = await request('/v1/agent-runs', {
        method: 'POST',
        json: { mode: 'swe', task: task.value, repo: { format, archive }, tests: names, test_command: cmd.value.trim() },
      });
      const run = await resp.json();
      location.hash = '#/agent-runs/' + encodeURIComponent(run.id);
    } catch (e) {
      error.textContent = 'The run could not start: ' + e.message + (e.field ? ` (${e.field})` : '');
    } finally {
      start.disabled = false;
    }
  });
  return h('details', { class: 'swe-start' }, h('summary', { text: 'Start a software-engineering run' }), form);
}
