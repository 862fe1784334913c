// notebook.js: the Notebook view, over a session of the API: cells of
// Python run one at a time in the session's interpreter (POST
// /v1/sessions/{id}/exec?stream=1), their output streamed, the last
// expression's value, DataFrames as tables, figures and errors shown; the
// session's files listed, uploaded and downloaded.
//
// Interrupting a cell closes its stream: the server then interrupts the
// cell (KeyboardInterrupt) and keeps the session, or kills the session if
// the cell does not yield. The cell is recorded as a run of the session,
// which the view reads back (GET /v1/runs?session=) to show how it ended.
// Restart closes the session (DELETE) and opens another with the same
// image. A reopened session shows the cells it ran from its runs.

import { ApiError, getJSON, pathOf, q, request } from './api.js';
import { artifactList } from './artifacts.js';
import { announce, append, clear, h } from './dom.js';
import {
  OutputPane, dataBytes, dataText, errorView, figure, fmtBytes, fmtMS, fmtTime, revokeAll, saveBytes,
  statusBadge, valueTable, displayView,
} from './render.js';
import { events, follow } from './sse.js';

/** notebooks keeps each opened session's notebook while the page lives, so leaving the view loses nothing. */
const notebooks = new Map();
window.addEventListener('crucible:key', () => notebooks.clear()); // another tenant's sessions

const TAB = '    ';

/** render shows the session picker, or the notebook of session id. */
export async function render(main, [id], signal) {
  if (!id) return renderPicker(main, signal);
  let nb = notebooks.get(id);
  if (nb) {
    main.append(nb.el);
    nb.refreshFiles();
    return;
  }
  main.append(h('p', { role: 'status', text: 'Opening the session…' }));
  try {
    const info = await getJSON(`/v1/sessions/${encodeURIComponent(id)}`, { signal });
    nb = new Notebook(info);
    notebooks.set(id, nb);
    await nb.loadHistory(signal);
  } catch (e) {
    if (signal.aborted) return;
    clear(main).append(h('h1', { text: 'Notebook' }),
      h('p', { class: 'form-error', role: 'alert', text: `Session ${id} cannot be opened: ${e.message}` }),
      h('p', {}, h('a', { href: '#/notebook', text: 'Back to the sessions' })));
    return;
  }
  if (signal.aborted) return;
  clear(main).append(nb.el);
  nb.refreshFiles();
  nb.cells.at(-1)?.textarea.focus();
}

const GiB = 1024 ** 3;

async function renderPicker(main, signal) {
  const error = h('p', { class: 'form-error', role: 'alert' });
  const images = h('select', { id: 'nb-image', name: 'image' });
  // The session's limits: empty means the server's default, which GET
  // /v1/sessions states (the same for every way a session is opened).
  const timeout = h('input', { id: 'nb-timeout', name: 'timeout', type: 'number', min: '1', step: '1', inputmode: 'numeric', 'aria-describedby': 'nb-limits-help' });
  const memory = h('input', { id: 'nb-memory', name: 'memory', type: 'number', min: '0.0625', step: 'any', inputmode: 'decimal', 'aria-describedby': 'nb-limits-help' });
  const limitsHelp = h('p', { id: 'nb-limits-help', class: 'help', text: 'Each cell may run for the timeout; the session holds the memory, its files included. A cell that runs out of memory restarts the interpreter: its variables are lost, its files kept.' });
  const create = h('button', { type: 'submit', class: 'primary', text: 'New session' });
  const form = h('form', { class: 'row', 'aria-label': 'New session' },
    h('label', { for: 'nb-image', text: 'Image' }), images,
    h('label', { for: 'nb-timeout', text: 'Cell timeout (s)' }), timeout,
    h('label', { for: 'nb-memory', text: 'Memory (GiB)' }), memory, create);
  const list = h('div', { 'aria-live': 'polite' }, h('p', { text: 'Loading the open sessions…' }));
  main.append(h('section', { class: 'view', 'aria-labelledby': 'nb-title' },
    h('h1', { id: 'nb-title', text: 'Notebook' }),
    h('p', { class: 'lead', text: 'A notebook runs Python cells in a session: one interpreter in its own sandbox, whose variables and files persist from cell to cell.' }),
    form, limitsHelp, error, h('h2', { text: 'Open sessions' }), list));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    create.disabled = true;
    error.textContent = '';
    try {
      const req = images.value ? { image: images.value } : {};
      const limits = {};
      if (timeout.value) limits.wall_time_ms = limits.cpu_time_ms = Math.round(Number(timeout.value) * 1000);
      if (memory.value) limits.memory_bytes = Math.round(Number(memory.value) * GiB);
      if (Object.keys(limits).length) req.limits = limits;
      const info = await getJSON('/v1/sessions', { method: 'POST', json: req });
      location.hash = '#/notebook/' + encodeURIComponent(info.id);
    } catch (e) {
      error.textContent = 'The session could not be opened: ' + e.message;
      create.disabled = false;
    }
  });
  try {
    const [imgs, sessions] = await Promise.all([getJSON('/v1/images', { signal }), getJSON('/v1/sessions', { signal })]);
    const preferred = imgs.session_default || imgs.default; // the server's image for sessions: the first with pandas
    for (const im of imgs.images) images.append(h('option', { value: im.name, selected: im.name === preferred, text: im.name }));
    const d = sessions.defaults;
    if (d) {
      if (!timeout.value && d.wall_time_ms) timeout.value = String(d.wall_time_ms / 1000);
      if (!memory.value && d.memory_bytes) memory.value = String(d.memory_bytes / GiB);
    }
    clear(list).append(sessionTable(sessions.sessions));
  } catch (e) {
    if (!signal.aborted) clear(list).append(h('p', { class: 'form-error', role: 'alert', text: 'The sessions could not be listed: ' + e.message }));
  }
}

function sessionTable(sessions) {
  if (!sessions.length) return h('p', { text: 'No open sessions. Start one above.' });
  return h('table', { class: 'grid' },
    h('caption', { class: 'sr-only', text: 'Open sessions, newest first' }),
    h('thead', {}, h('tr', {}, ['Session', 'Image', 'Limits', 'Cells', 'Created', 'Last used'].map((t) => h('th', { scope: 'col', text: t })))),
    h('tbody', {}, sessions.map((s) => h('tr', {},
      h('td', {}, h('a', { href: '#/notebook/' + encodeURIComponent(s.id), text: s.id })),
      h('td', { text: s.image }), h('td', { text: limitsText(s.limits) }), h('td', { class: 'num', text: String(s.cells) }),
      h('td', { text: fmtTime(s.created_at) }), h('td', { text: fmtTime(s.last_used_at) })))));
}

/** limitsText says a session's limits as a user sets them: per cell, and the memory. */
function limitsText(l) {
  if (!l) return '';
  return `${l.wall_time_ms / 1000} s per cell · ${fmtBytes(l.memory_bytes)}`;
}

/** Notebook is the notebook of one session. */
class Notebook {
  constructor(info) {
    this.info = info;
    this.cells = [];
    this.queue = [];
    this.running = null;
    this.count = info.cells;
    this.list = h('ol', { class: 'cells', 'aria-label': 'Cells' });
    this.status = h('p', { class: 'session-status', role: 'status' });
    this.runAllBtn = button('Run all', () => this.runAll(), { class: 'run-all' });
    this.stopBtn = button('Interrupt', () => this.interrupt(), { class: 'interrupt', disabled: true });
    this.restartBtn = button('Restart', () => this.restart(), { class: 'restart' });
    this.closeBtn = button('Close session', () => this.close(), { class: 'close' });
    this.files = new FilesPanel(this);
    this.el = h('section', { class: 'view notebook', 'aria-labelledby': 'nb-title' },
      h('div', { class: 'toolbar' },
        h('h1', { id: 'nb-title' }, 'Notebook ', h('span', { class: 'muted', text: info.id })),
        h('div', { class: 'row', role: 'toolbar', 'aria-label': 'Session' }, this.runAllBtn, this.stopBtn, this.restartBtn, this.closeBtn,
          h('a', { href: '#/notebook', text: 'All sessions' }))),
      this.status,
      h('p', { id: 'editor-help', class: 'help', text: 'Shift+Enter runs the cell and moves to the next; Ctrl+Enter runs it in place. Tab indents; press Escape, then Tab, to leave the editor.' }),
      h('div', { class: 'nb-grid' },
        h('div', {}, this.list, button('Add cell', () => this.add('').textarea.focus(), { class: 'add-cell' })),
        this.files.el));
    this.showStatus();
  }

  showStatus(extra) {
    const i = this.info;
    this.status.textContent = `Session ${i.id} · image ${i.image} · ${limitsText(i.limits)} · ${this.count} cells run` +
      (i.restarts ? ` · interpreter restarted ${i.restarts}×` : '') + (extra ? ' · ' + extra : '');
  }

  /** loadHistory shows the cells the session already ran, from its runs, or one empty cell. */
  async loadHistory(signal) {
    const list = await getJSON('/v1/runs' + q({ session: this.info.id, limit: 100 }), { signal });
    for (const run of list.runs.reverse()) this.add(run.code).showRun(run, signal);
    this.add('');
  }

  add(code, after) {
    const cell = new Cell(this, code);
    const i = after ? this.cells.indexOf(after) + 1 : this.cells.length;
    this.cells.splice(i, 0, cell);
    if (after) after.el.after(cell.el);
    else this.list.append(cell.el);
    return cell;
  }

  remove(cell) {
    if (cell === this.running) return;
    this.queue = this.queue.filter((c) => c !== cell);
    const i = this.cells.indexOf(cell);
    this.cells.splice(i, 1);
    revokeAll(cell.urls);
    cell.el.remove();
    if (!this.cells.length) this.add('');
    (this.cells[i] || this.cells[i - 1]).textarea.focus();
  }

  /** run queues cell; cells run one at a time, in the order asked. */
  run(cell) {
    if (cell === this.running || this.queue.includes(cell)) return;
    this.queue.push(cell);
    cell.setState('queued');
    this.next();
  }

  runAll() {
    for (const c of this.cells) if (c.textarea.value.trim()) this.run(c);
  }

  async next() {
    if (this.running || !this.queue.length) return;
    const cell = (this.running = this.queue.shift());
    this.stopBtn.disabled = false;
    try {
      await cell.exec(this.info.id);
    } finally {
      this.running = null;
      this.stopBtn.disabled = !this.queue.length;
      this.next();
    }
  }

  interrupt() {
    for (const c of this.queue) c.setState('idle');
    this.queue = [];
    this.running?.interrupt();
    this.stopBtn.disabled = true;
  }

  async restart() {
    this.interrupt();
    this.restartBtn.disabled = true;
    this.showStatus('restarting…');
    try {
      await request(`/v1/sessions/${encodeURIComponent(this.info.id)}`, { method: 'DELETE' }).catch((e) => {
        if (!(e instanceof ApiError && (e.status === 404 || e.status === 410))) throw e;
      });
      const info = await getJSON('/v1/sessions', { method: 'POST', json: { image: this.info.image, limits: this.info.limits } });
      notebooks.delete(this.info.id);
      this.info = info;
      this.count = 0;
      notebooks.set(info.id, this);
      for (const c of this.cells) c.reset();
      history.replaceState(null, '', '#/notebook/' + encodeURIComponent(info.id));
      this.el.querySelector('#nb-title .muted').textContent = info.id;
      this.showStatus('restarted: variables and files are gone');
      this.files.refresh();
      announce('The session was restarted.');
    } catch (e) {
      this.showStatus('restart failed: ' + e.message);
    } finally {
      this.restartBtn.disabled = false;
    }
  }

  async close() {
    this.interrupt();
    try {
      await request(`/v1/sessions/${encodeURIComponent(this.info.id)}`, { method: 'DELETE' });
    } catch (e) {
      if (!(e instanceof ApiError && (e.status === 404 || e.status === 410))) {
        this.showStatus('close failed: ' + e.message);
        return;
      }
    }
    notebooks.delete(this.info.id);
    for (const c of this.cells) revokeAll(c.urls);
    location.hash = '#/notebook';
  }

  refreshFiles() {
    this.files.refresh();
  }
}

/** Cell is one cell: its editor and what its last run showed. */
class Cell {
  constructor(nb, code) {
    this.nb = nb;
    this.urls = new Set();
    this.controller = null;
    this.tabLeaves = false;
    this.errorLine = 0;
    this.prompt = h('span', { class: 'prompt', text: '[ ]' });
    this.textarea = h('textarea', {
      class: 'code-input', spellcheck: 'false', autocapitalize: 'off', autocomplete: 'off', wrap: 'off',
      'aria-label': 'Code', 'aria-describedby': 'editor-help',
    });
    this.textarea.value = code;
    this.gutter = h('div', { class: 'gutter', 'aria-hidden': 'true' });
    this.stdout = new OutputPane('stdout', 'Standard output');
    this.stderr = new OutputPane('stderr', 'Standard error');
    this.result = h('div', { class: 'result' });
    this.state = h('p', { class: 'cell-status', role: 'status' });
    this.el = h('li', { class: 'cell', dataset: { state: 'idle' } },
      h('div', { class: 'cell-head' }, this.prompt,
        button('Run', () => nb.run(this), { 'aria-label': 'Run this cell' }),
        button('Delete', () => nb.remove(this), { 'aria-label': 'Delete this cell' })),
      h('div', { class: 'editor' }, this.gutter, this.textarea),
      h('div', { class: 'cell-output', 'aria-live': 'polite' }, this.stdout.el, this.stderr.el, this.result, this.state));
    this.textarea.addEventListener('input', () => this.layout());
    this.textarea.addEventListener('keydown', (ev) => this.key(ev));
    this.layout();
    this.labelCell();
  }

  labelCell() {
    const n = this.nb.cells.indexOf(this) + 1 || this.nb.cells.length + 1;
    this.textarea.setAttribute('aria-label', `Code of cell ${n}`);
  }

  /** layout sizes the editor to its code and numbers its lines, the failing one marked. */
  layout() {
    const lines = this.textarea.value.split('\n').length;
    this.textarea.rows = Math.max(2, lines);
    const shown = Math.min(lines, 10000);
    if (this.gutter.childElementCount !== shown || this.gutter.dataset.error !== String(this.errorLine)) {
      const spans = [];
      for (let i = 1; i <= shown; i++) spans.push(h('span', { class: i === this.errorLine ? 'error-line' : null, text: String(i) }));
      this.gutter.replaceChildren(...spans);
      this.gutter.dataset.error = String(this.errorLine);
    }
  }

  key(ev) {
    const ta = this.textarea;
    if (ev.key === 'Enter' && (ev.shiftKey || ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      this.nb.run(this);
      if (ev.shiftKey) {
        const i = this.nb.cells.indexOf(this);
        (this.nb.cells[i + 1] || this.nb.add('')).textarea.focus();
      }
      return;
    }
    if (ev.key === 'Escape') {
      this.tabLeaves = true;
      announce('Tab now moves to the next control.');
      return;
    }
    if (ev.key === 'Tab' && !this.tabLeaves && !ev.ctrlKey && !ev.altKey && !ev.metaKey) {
      ev.preventDefault();
      indent(ta, ev.shiftKey);
      this.layout();
      return;
    }
    if (ev.key !== 'Tab' && ev.key !== 'Shift') this.tabLeaves = false;
  }

  setState(state, text = '') {
    this.el.dataset.state = state;
    this.state.replaceChildren();
    if (state === 'queued') this.state.textContent = 'Queued';
    else if (state === 'running') this.state.textContent = 'Running…';
    else if (text) this.state.textContent = text;
  }

  /** reset clears what the last run showed. */
  reset() {
    revokeAll(this.urls);
    this.stdout.set('');
    this.stderr.set('');
    this.result.replaceChildren();
    this.prompt.textContent = '[ ]';
    this.errorLine = 0;
    this.layout();
    this.setState('idle');
  }

  /** exec runs the cell in session sid, streaming its output. */
  async exec(sid) {
    const code = this.textarea.value;
    this.reset();
    this.setState('running');
    this.prompt.textContent = '[*]';
    this.controller = new AbortController();
    let result = null;
    let failure = null;
    try {
      const resp = await request(`/v1/sessions/${encodeURIComponent(sid)}/exec?stream=1`, {
        method: 'POST', json: { code }, signal: this.controller.signal, headers: { Accept: 'text/event-stream' },
      });
      for await (const e of events(resp)) {
        if (e.event === 'stdout') this.stdout.add(dataText(e.data));
        else if (e.event === 'stderr') this.stderr.add(dataText(e.data));
        else if (e.event === 'result') result = e.data;
        else if (e.event === 'error') failure = new ApiError(500, { error: e.data });
      }
      if (!result && !failure) failure = new Error('the stream ended without the result');
    } catch (e) {
      failure = e;
    }
    const interrupted = this.controller.signal.aborted;
    this.controller = null;
    if (result) {
      this.nb.count++;
      this.showResult(result, code, this.nb.count);
      if (result.restarted) {
        // The session lives on in a fresh interpreter: say so where the
        // session's state is shown, and to a screen reader.
        this.nb.info.restarts = (this.nb.info.restarts || 0) + 1;
        announce('The cell ran out of memory: the interpreter was restarted, its variables are lost, the files are kept.');
      }
    } else if (interrupted) {
      this.nb.count++;
      this.prompt.textContent = `[${this.nb.count}]`;
      this.setState('interrupted', 'Interrupted: the cell was stopped (KeyboardInterrupt); the session is kept unless the cell ignored it.');
      await this.recorded(sid, code);
    } else {
      this.prompt.textContent = '[!]';
      const closed = failure instanceof ApiError && (failure.status === 410 || failure.status === 404);
      this.setState('failed', (closed ? 'The session is gone: ' : 'The cell could not run: ') + failure.message +
        (closed ? ' Restart to open a new session.' : ''));
    }
    this.nb.showStatus();
    this.nb.files.refresh();
  }

  interrupt() {
    this.controller?.abort();
  }

  /** recorded shows how an interrupted cell ended, from the session's newest run. */
  async recorded(sid, code) {
    try {
      const { runs } = await getJSON('/v1/runs' + q({ session: sid, limit: 1 }));
      const run = runs[0];
      if (!run || run.code !== code) return;
      let res = run;
      if (run.status === 'queued' || run.status === 'running') {
        await follow(`/v1/runs/${encodeURIComponent(run.id)}/events`, (e) => {
          if (e.event === 'result') res = e.data;
        }, AbortSignal.timeout(30000));
      }
      this.stdout.set(dataText(res.stdout));
      this.stderr.set(dataText(res.stderr));
      this.setState('interrupted', `Interrupted: ${res.status}${res.reason ? ' — ' + res.reason : ''}`);
      this.state.prepend(statusBadge(res.status), ' ');
    } catch {
      // the state already says the cell was interrupted
    }
  }

  /** showResult shows a cell's Result (or a recorded run's result). */
  showResult(res, code, n) {
    this.prompt.textContent = `[${n}]`;
    this.stdout.set(dataText(res.stdout));
    this.stderr.set(dataText(res.stderr));
    const parts = [];
    (res.displays || []).forEach((d, i) => parts.push(displayView(d, `Display ${i + 1} of cell ${n}`, this.urls)));
    if (res.value_html) parts.push(valueTable(res.value_html, `Value of cell ${n}`));
    else if (res.value) parts.push(h('pre', { class: 'output value', 'aria-label': `Value of cell ${n}`, text: res.value }));
    const files = [];
    for (const a of res.artifacts || []) {
      const img = !a.content_omitted && figure(dataBytes(a.content), a.mime, a.name, this.urls);
      if (img) parts.push(img);
      else files.push(a);
    }
    if (files.length) parts.push(artifactFiles(files));
    if (res.error) {
      parts.push(errorView(res.error, code));
      this.errorLine = res.error.line || 0;
      this.layout();
    }
    this.result.replaceChildren(...parts);
    const ok = res.status === 'ok';
    this.setState(ok ? 'ok' : 'error');
    append(this.state, [statusBadge(res.status), ' ', fmtMS(res.metrics?.wall_ms), res.reason ? ' — ' + res.reason : '']);
  }

  /** showRun shows a recorded run of the session (a reopened notebook's cell). */
  showRun(run, signal) {
    const n = this.nb.cells.indexOf(this) + 1;
    this.showResult(run, run.code, n);
    if (run.artifacts?.length) this.result.append(artifactList(run.id, run.artifacts, this.urls, signal));
    append(this.state, [' · from the session\'s history']);
  }
}

function artifactFiles(files) {
  return h('ul', { class: 'files-list', 'aria-label': 'Files the cell wrote' }, files.map((a) => {
    const label = `${a.name} (${fmtBytes(a.size)})`;
    if (a.content_omitted || a.withheld) return h('li', { text: label + (a.withheld ? ': withheld, ' + a.withheld : ': content not returned') });
    return h('li', {}, button('Download ' + label, () => saveBytes(dataBytes(a.content), a.mime, a.name), { class: 'link' }));
  }));
}

/** indent indents (or, with out, dedents) the selected lines of ta, or inserts a tab stop at the caret. */
function indent(ta, out) {
  const { selectionStart: s, selectionEnd: e, value } = ta;
  if (s === e && !out) {
    ta.setRangeText(TAB, s, e, 'end');
    return;
  }
  const from = value.lastIndexOf('\n', s - 1) + 1;
  const lines = value.slice(from, e).split('\n');
  const changed = lines.map((l) => (out ? l.replace(/^( {1,4}|\t)/, '') : TAB + l)).join('\n');
  ta.setRangeText(changed, from, e, 'select');
}

function button(text, onClick, props = {}) {
  return h('button', { type: 'button', ...props, text, on: { click: onClick } });
}

/** FilesPanel lists the session's files, uploads and downloads them. */
class FilesPanel {
  constructor(nb) {
    this.nb = nb;
    this.input = h('input', { type: 'file', id: 'nb-upload', multiple: true });
    this.msg = h('p', { class: 'files-msg', role: 'status' });
    this.list = h('ul', { class: 'files-list', 'aria-label': 'Files of the session' });
    this.input.addEventListener('change', () => this.upload());
    this.el = h('aside', { class: 'files', 'aria-labelledby': 'files-title' },
      h('h2', { id: 'files-title', text: 'Files' }),
      h('label', { for: 'nb-upload', class: 'upload', text: 'Upload files' }), this.input,
      button('Refresh', () => this.refresh()),
      this.msg, this.list);
  }

  async refresh() {
    const sid = this.nb.info.id;
    try {
      const { files } = await getJSON(`/v1/sessions/${encodeURIComponent(sid)}/files`);
      const items = files.filter((f) => !f.dir).map((f) =>
        h('li', {}, button(f.name, () => this.download(f.name), { class: 'link', 'aria-label': `Download ${f.name}` }),
          h('span', { class: 'muted', text: ' ' + fmtBytes(f.size) })));
      this.list.replaceChildren(...items);
      if (!items.length) this.list.append(h('li', { class: 'muted', text: 'No files yet.' }));
    } catch (e) {
      this.msg.textContent = 'The files could not be listed: ' + e.message;
    }
  }

  async upload() {
    const sid = this.nb.info.id;
    const names = [];
    for (const f of this.input.files) {
      this.msg.textContent = `Uploading ${f.name}…`;
      try {
        await request(`/v1/sessions/${encodeURIComponent(sid)}/files/${pathOf(f.name)}`, { method: 'PUT', body: f });
        names.push(f.name);
      } catch (e) {
        this.msg.textContent = `${f.name} was not uploaded: ${e.message}`;
        return;
      }
    }
    this.input.value = '';
    this.msg.textContent = 'Uploaded ' + names.join(', ');
    this.refresh();
  }

  async download(name) {
    try {
      const resp = await request(`/v1/sessions/${encodeURIComponent(this.nb.info.id)}/files/${pathOf(name)}`);
      saveBytes(new Uint8Array(await resp.arrayBuffer()), resp.headers.get('Content-Type'), name);
    } catch (e) {
      this.msg.textContent = `${name} could not be downloaded: ${e.message}`;
    }
  }
}
