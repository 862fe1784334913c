// analyst.js: the Analyst view. #/analyses lists the caller's analyses
// (GET /v1/analyses) and creates one from uploaded files (dropped on the
// drop zone or chosen with the file button; POST /v1/analyses as
// multipart/form-data, with the image chosen); #/analyses/ID shows its
// profile and its conversation (GET /v1/analyses/{id} and
// .../questions), and asks questions (POST .../questions), each followed
// live from its event stream. A question still being answered when the
// analysis is reopened is followed again from its first event.

import { ApiError, getJSON, request } from './api.js';
import { announce, clear, h, withCode } from './dom.js';
import { fmtBytes, fmtTime } from './render.js';
import { profileView } from './profile.js';
import { Question } from './question.js';

/** render shows the list and the upload form, or analysis id. */
export async function render(main, [id], signal) {
  if (id) return renderAnalysis(main, id, signal);
  return renderList(main, signal);
}

async function renderList(main, signal) {
  const upload = new UploadForm();
  const list = h('div', { 'aria-live': 'polite' }, h('p', { text: 'Loading your analyses…' }));
  main.append(h('section', { class: 'view analyst', 'aria-labelledby': 'an-title' },
    h('h1', { id: 'an-title', text: 'Analyst' }),
    h('p', { class: 'lead', text: 'Upload data files (CSV, TSV, Excel, JSON), read their profile, then ask questions in plain language: the analyst writes and runs the code in a sandbox and answers with text, charts and tables.' }),
    upload.el, h('h2', { text: 'Your analyses' }), list));
  try {
    const [imgs, analyses] = await Promise.all([getJSON('/v1/images', { signal }), getJSON('/v1/analyses', { signal })]);
    upload.setImages(imgs);
    const table = analysisTable(analyses.analyses);
    clear(list).append(table, olderButton(table, analyses.next, signal));
  } catch (e) {
    if (!signal.aborted) clear(list).append(h('p', { class: 'form-error', role: 'alert', text: 'The analyses could not be listed: ' + e.message }));
  }
}

function analysisTable(list) {
  if (!list.length) return h('p', { text: 'No analyses yet. Upload a file above.' });
  return h('table', { class: 'grid analyses' },
    h('caption', { class: 'sr-only', text: 'Your analyses, newest first' }),
    h('thead', {}, h('tr', {}, ['Analysis', 'Datasets', 'Questions', 'Image', 'Created'].map((t) => h('th', { scope: 'col', text: t })))),
    h('tbody', {}, list.map(analysisRow)));
}

function analysisRow(a) {
  return h('tr', {},
    h('td', {}, h('a', { href: '#/analyses/' + encodeURIComponent(a.id), text: a.id })),
    h('td', { text: a.datasets.join(', ') }), h('td', { class: 'num', text: String(a.questions) }),
    h('td', { text: a.image }), h('td', { text: fmtTime(a.created_at) }));
}

/**
 * olderButton, when next is the cursor of a further page of analyses (the list is paged,
 * newest first), is a button that adds that page's rows to table; null after the last page.
 */
function olderButton(table, next, signal) {
  if (!next) return null;
  const button = h('button', { type: 'button', class: 'older', text: 'Show older analyses' });
  button.addEventListener('click', async () => {
    button.disabled = true;
    try {
      const page = await getJSON('/v1/analyses?cursor=' + encodeURIComponent(next), { signal });
      table.querySelector('tbody').append(...page.analyses.map(analysisRow));
      button.replaceWith(olderButton(table, page.next, signal) || '');
    } catch (e) {
      if (signal.aborted) return;
      button.disabled = false;
      button.after(h('p', { class: 'form-error', role: 'alert', text: 'The older analyses could not be listed: ' + e.message }));
    }
  });
  return button;
}

/** UploadForm picks files (drop zone or file button) and an image, and creates the analysis. */
class UploadForm {
  constructor() {
    this.files = [];
    this.input = h('input', { type: 'file', id: 'an-files', multiple: true, accept: '.csv,.tsv,.txt,.xlsx,.xls,.json,.jsonl,.ndjson' });
    this.chosen = h('ul', { class: 'files-list chosen', 'aria-label': 'Files chosen' });
    this.images = h('select', { id: 'an-image', name: 'image' }, h('option', { value: '', text: 'Server default' }));
    this.create = h('button', { type: 'submit', class: 'primary', text: 'Create analysis', disabled: true });
    this.error = h('p', { class: 'form-error', role: 'alert' });
    this.status = h('p', { class: 'muted', role: 'status' });
    this.zone = h('div', { class: 'drop-zone', dataset: { over: 'false' } },
      h('p', { text: 'Drop data files here, or ' }),
      h('label', { for: 'an-files', class: 'upload', text: 'Choose files…' }), this.input);
    this.el = h('form', { class: 'upload-form', 'aria-label': 'New analysis' },
      this.zone, this.chosen,
      h('div', { class: 'row' }, h('label', { for: 'an-image', text: 'Image' }), this.images, this.create),
      this.status, this.error);
    this.input.addEventListener('change', () => {
      this.add(this.input.files);
      this.input.value = '';
    });
    for (const ev of ['dragenter', 'dragover']) {
      this.zone.addEventListener(ev, (e) => {
        e.preventDefault();
        this.zone.dataset.over = 'true';
      });
    }
    this.zone.addEventListener('dragleave', () => { this.zone.dataset.over = 'false'; });
    this.zone.addEventListener('drop', (e) => {
      e.preventDefault();
      this.zone.dataset.over = 'false';
      this.add(e.dataTransfer.files);
    });
    this.el.addEventListener('submit', (e) => {
      e.preventDefault();
      this.submit();
    });
  }

  setImages(imgs) {
    const preferred = imgs.session_default || imgs.default; // an analysis needs pandas: the server's session image has it
    for (const im of imgs.images) this.images.append(h('option', { value: im.name, selected: im.name === preferred, text: im.name }));
  }

  add(fileList) {
    for (const f of fileList) {
      this.files = this.files.filter((o) => o.name !== f.name);
      this.files.push(f);
    }
    this.showChosen();
  }

  showChosen() {
    this.chosen.replaceChildren(...this.files.map((f) => h('li', {},
      h('span', { class: 'mono', text: f.name }), h('span', { class: 'muted', text: ` ${fmtBytes(f.size)} ` }),
      h('button', {
        type: 'button', class: 'link', text: 'Remove', 'aria-label': 'Remove ' + f.name,
        on: { click: () => { this.files = this.files.filter((o) => o !== f); this.showChosen(); } },
      }))));
    this.create.disabled = !this.files.length;
    announce(`${this.files.length} file${this.files.length === 1 ? '' : 's'} chosen.`);
  }

  async submit() {
    if (!this.files.length) return;
    const form = new FormData();
    for (const f of this.files) form.append('datasets', f, f.name);
    if (this.images.value) form.append('image', this.images.value);
    this.create.disabled = true;
    this.error.textContent = '';
    this.status.textContent = 'Reading and profiling the data in a sandbox…';
    try {
      const a = await getJSON('/v1/analyses', { method: 'POST', body: form });
      created.set(a.id, a);
      location.hash = '#/analyses/' + encodeURIComponent(a.id);
    } catch (e) {
      this.status.textContent = '';
      this.error.replaceChildren(...withCode('The analysis could not be created: ' + e.message + (e.field ? ` (${e.field}: ${e.rule})` : '')));
      this.create.disabled = false;
    }
  }
}

/** created keeps the answer of POST /v1/analyses for the page it opens, sparing a request. */
const created = new Map();

async function renderAnalysis(main, id, signal) {
  main.append(h('p', { role: 'status', text: 'Opening the analysis…' }));
  let a;
  let questions;
  try {
    a = created.get(id) || (await getJSON(`/v1/analyses/${encodeURIComponent(id)}`, { signal }));
    created.delete(id);
    questions = a.questions ? (await getJSON(`/v1/analyses/${encodeURIComponent(id)}/questions`, { signal })).questions : [];
  } catch (e) {
    if (signal.aborted) return;
    clear(main).append(h('h1', { text: 'Analyst' }),
      h('p', { class: 'form-error', role: 'alert', text: `Analysis ${id} cannot be opened: ${e.message}` }),
      h('p', {}, h('a', { href: '#/analyses', text: 'Back to the analyses' })));
    return;
  }
  if (signal.aborted) return;
  const view = new AnalysisView(a, signal);
  clear(main).append(view.el);
  for (const q of questions) view.add(q);
  view.ask.focus();
}

/** AnalysisView is an open analysis: its profile, its thread and the question form. */
class AnalysisView {
  constructor(a, signal) {
    this.a = a;
    this.signal = signal;
    this.questions = [];
    signal.addEventListener('abort', () => { for (const q of this.questions) q.dispose(); }, { once: true });
    this.thread = h('ol', { class: 'thread', 'aria-label': 'Questions and answers' });
    this.ask = h('textarea', { id: 'an-question', rows: '3', 'aria-describedby': 'an-question-help', placeholder: 'e.g. What is the mean of charges by region? Plot it.' });
    this.approve = h('input', { type: 'checkbox', id: 'an-approve' });
    this.textMode = h('input', { type: 'checkbox', id: 'an-text-mode' });
    this.askBtn = h('button', { type: 'submit', class: 'primary', text: 'Ask' });
    this.error = h('p', { class: 'form-error', role: 'alert' });
    const form = h('form', { class: 'ask-form', 'aria-label': 'Ask a question' },
      h('label', { for: 'an-question', text: 'Your question' }), this.ask,
      h('p', { id: 'an-question-help', class: 'help', text: 'Enter asks; Shift+Enter starts a new line. Follow-ups can use what earlier answers defined.' }),
      h('div', { class: 'row' }, this.askBtn,
        h('span', { class: 'check' }, this.approve, h('label', { for: 'an-approve', text: 'Ask for my approval before running code' })),
        h('span', { class: 'check' }, this.textMode, h('label', { for: 'an-text-mode', text: 'Text mode (for a model without tool calls)' }))),
      this.error);
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      this.submit();
    });
    this.ask.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        this.submit();
      }
    });
    this.closeBtn = h('button', { type: 'button', text: 'Close analysis', on: { click: () => this.close() } });
    this.el = h('section', { class: 'view analyst', 'aria-labelledby': 'an-title' },
      h('div', { class: 'toolbar' },
        h('h1', { id: 'an-title' }, 'Analysis ', h('span', { class: 'muted', text: a.id })),
        h('div', { class: 'row' }, this.closeBtn, h('a', { href: '#/analyses', text: 'All analyses' }))),
      this.status = h('p', { class: 'session-status' }),
      this.rebuilt = h('p', { class: 'note rebuilt-note', role: 'status', hidden: true }),
      h('details', { class: 'profile-box', open: true }, h('summary', {}, h('h2', { text: 'Profile' })),
        profileView(parseProfile(a.profile))),
      h('h2', { text: 'Questions' }), this.thread, form);
    this.showSession(a);
  }

  /**
   * showSession shows where the analysis's DataFrames live: its session, or none
   * (it ended: the next question rebuilds it), and a note once a session was rebuilt.
   */
  showSession(a) {
    const session = a.session_id ? `session ${a.session_id}` : 'no session open (the next question rebuilds it)';
    this.status.textContent = `${a.datasets.join(', ')} · image ${a.image} · ${session} · created ${fmtTime(a.created_at)}`;
    if (a.rebuilt_at) {
      const cells = a.rebuilt_cells || 0;
      this.rebuilt.textContent = `The session was rebuilt from the stored datasets and ${cells} cell${cells === 1 ? '' : 's'} (${fmtTime(a.rebuilt_at)}): ` +
        'its earlier session had ended, so the programs that built its state were run again.';
      this.rebuilt.hidden = false;
    }
  }

  /** onRebuilt shows that a question rebuilt the session (its session_rebuilt event). */
  onRebuilt(r) {
    Object.assign(this.a, { session_id: r.session_id, rebuilt_at: r.rebuilt_at, rebuilt_cells: r.cells });
    this.showSession(this.a);
  }

  /** add shows question q (an AnalysisQuestion) and follows it until it ends, if it has not. */
  add(q) {
    const item = new Question(this.a.id, q, (r) => this.onRebuilt(r));
    this.questions.push(item);
    this.thread.append(item.el);
    if (q.answer) item.showAnswer(q);
    if (q.run.status === 'running' || q.run.status === 'awaiting_approval') return item.follow(this.signal).then(() => item);
    item.progress.hidden = true; // the progress of a question answered earlier is in its trace, not here
    return Promise.resolve(item);
  }

  async submit() {
    const question = this.ask.value.trim();
    if (!question || this.askBtn.disabled) return;
    this.askBtn.disabled = true;
    this.error.textContent = '';
    try {
      const body = { question, approve: this.approve.checked, text_mode: this.textMode.checked };
      const q = await getJSON(`/v1/analyses/${encodeURIComponent(this.a.id)}/questions`, { method: 'POST', json: body });
      this.ask.value = '';
      const following = this.add(q);
      following.finally(() => { this.askBtn.disabled = false; });
      return;
    } catch (e) {
      this.error.replaceChildren(...withCode(askError(e)));
    }
    this.askBtn.disabled = false;
  }

  async close() {
    try {
      await request(`/v1/analyses/${encodeURIComponent(this.a.id)}`, { method: 'DELETE' });
    } catch (e) {
      if (!(e instanceof ApiError && (e.status === 404 || e.status === 410))) {
        this.error.textContent = 'The analysis could not be closed: ' + e.message;
        return;
      }
    }
    location.hash = '#/analyses';
  }
}

/** askError says why a question was not taken: a server without a model (501) says so plainly. */
function askError(e) {
  if (e instanceof ApiError && e.status === 501) return 'This server cannot answer questions: ' + e.message;
  return 'The question was not asked: ' + e.message + (e.field ? ` (${e.field}: ${e.rule})` : '');
}

function parseProfile(p) {
  if (!p) return null;
  return typeof p === 'string' ? JSON.parse(p) : p;
}
