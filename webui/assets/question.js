// question.js: one question of an analysis in the thread: its progress
// live from its event stream (the model's steps, each program about to
// run, its output as it runs, how it ended, retries and why, the
// verification), a program waiting for approval with Approve and Refuse,
// then the answer: text, charts, tables, and the code and its output
// folded beneath, with downloads of the charts and files. The model, the
// program and the data wrote every string here: all are shown as text,
// tables through the sanitiser, charts as images from blob URLs.

import { pathOf, request } from './api.js';
import { announce, h } from './dom.js';
import { OutputPane, clip, codeView, dataText, errorView, fmtBytes, revokeAll, saveBytes, statusBadge, valueTable } from './render.js';
import { follow } from './sse.js';

/** CHART_TYPES are the chart types shown inline (the analyst's charts are PNG). */
const CHART_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** MAX_STEPS bounds the progress lines kept for one question. */
const MAX_STEPS = 500;

/**
 * Question is one question of analysis aid in the thread; onRebuilt, if given, is told
 * when the question rebuilt the analysis's session (its session_rebuilt event).
 */
export class Question {
  constructor(aid, q, onRebuilt) {
    this.aid = aid;
    this.onRebuilt = onRebuilt;
    this.n = q.n;
    this.urls = new Set();
    this.steps = h('ol', { class: 'steps', 'aria-label': 'Progress' });
    this.stepCount = 0;
    this.progress = h('details', { class: 'progress', open: true },
      h('summary', { text: 'Progress' }), this.steps);
    this.approval = h('div', { class: 'approval-slot' });
    this.answer = h('div', { class: 'answer', 'aria-live': 'polite' });
    this.status = h('p', { class: 'question-status', role: 'status' });
    this.el = h('li', { class: 'question', dataset: { n: String(q.n), state: q.run.status } },
      h('h3', { class: 'question-text' }, h('span', { class: 'muted', text: `Q${q.n} ` }), q.run.task),
      this.progress, this.approval, this.answer, this.status);
    this.attempt = null; // {stdout, stderr} panes of the program running
    this.showStatus(q.run);
  }

  /** dispose revokes the blob URLs of the question's charts. */
  dispose() {
    revokeAll(this.urls);
  }

  showStatus(run) {
    this.el.dataset.state = run.status;
    this.status.replaceChildren(statusBadge(run.status), run.reason ? ' ' + run.reason : '');
  }

  /**
   * follow shows the question's events as they come until its result;
   * it returns early, without error, when signal aborts.
   */
  async follow(signal) {
    const path = `/v1/analyses/${encodeURIComponent(this.aid)}/questions/${this.n}/events`;
    try {
      await follow(path, (e) => this.onEvent(e), signal);
    } catch (e) {
      if (!signal.aborted) this.addStep('error', `The progress could not be followed: ${e.message}`);
    }
  }

  onEvent({ event, data }) {
    switch (event) {
      case 'agent_run':
        this.showStatus(data);
        break;
      case 'session_rebuilt':
        this.addStep('rebuild', `The session had ended: a new one was opened, the datasets loaded and ${data.cells} cell${data.cells === 1 ? '' : 's'} replayed (${data.duration_ms} ms).`);
        if (this.onRebuilt) this.onRebuilt(data);
        break;
      case 'step':
        this.addStep(data.kind, `${stepLabel(data.kind)} (attempt ${data.attempt}): ${data.message}`);
        break;
      case 'code':
        this.addCode(data);
        break;
      case 'stdout':
      case 'stderr':
        this.addOutput(event, dataText(data));
        break;
      case 'execution':
        this.addExecution(data);
        break;
      case 'approval':
        this.showApproval(data);
        this.el.dataset.state = 'awaiting_approval';
        break;
      case 'approval_decision':
        this.approval.replaceChildren(h('p', { class: 'decision', text: decisionText(data) }));
        this.addStep(data.approved ? 'approved' : 'refused', decisionText(data));
        break;
      case 'answer':
        this.showAnswer(data);
        break;
      case 'result':
        this.showStatus(data);
        this.progress.open = false;
        announce(`Question ${this.n}: ${data.status}`);
        break;
    }
  }

  addStep(kind, text, ...extra) {
    if (this.stepCount >= MAX_STEPS) return null;
    this.stepCount++;
    const li = h('li', { class: 'step', dataset: { kind } }, h('span', { class: 'step-text', text: clip(text, 4000) }), ...extra);
    if (this.stepCount === MAX_STEPS) li.append(h('p', { class: 'note', text: 'Later steps are not shown.' }));
    this.steps.append(li);
    return li;
  }

  addCode(c) {
    this.attempt = { stdout: new OutputPane('stdout', `Output of attempt ${c.attempt}`), stderr: new OutputPane('stderr', `Errors of attempt ${c.attempt}`) };
    this.addStep('code', `Running the program of attempt ${c.attempt}:`, codeView(c.code, 0, `Program of attempt ${c.attempt}`),
      this.attempt.stdout.el, this.attempt.stderr.el);
  }

  addOutput(stream, text) {
    if (!this.attempt) this.addCode({ attempt: '?', code: '' });
    this.attempt[stream].add(text);
  }

  addExecution(x) {
    const li = this.addStep('execution', `The program of attempt ${x.attempt} ended: `);
    if (!li) return;
    li.append(statusBadge(x.status), x.reason ? ' ' + x.reason : '');
    if (x.error) li.append(errorView(x.error, ''));
    this.attempt = null;
  }

  showApproval(a) {
    const reason = h('input', { type: 'text', id: `refuse-reason-${this.n}`, class: 'reason-input', autocomplete: 'off' });
    const error = h('p', { class: 'form-error', role: 'alert' });
    const decide = async (approve) => {
      for (const b of box.querySelectorAll('button')) b.disabled = true;
      error.textContent = '';
      try {
        await request(`/v1/analyses/${encodeURIComponent(this.aid)}/questions/${this.n}/approvals/${encodeURIComponent(a.id)}`,
          { method: 'POST', json: { approve, reason: reason.value } });
      } catch (e) {
        error.textContent = 'The decision was not taken: ' + e.message;
        for (const b of box.querySelectorAll('button')) b.disabled = false;
      }
    };
    const box = h('div', { class: 'approval', role: 'group', 'aria-label': `Approval of the program of attempt ${a.attempt}` },
      h('p', { class: 'approval-title' }, h('strong', { text: 'Run this program?' }),
        ` The analyst waits for your decision (attempt ${a.attempt}; until ${new Date(a.expires_at).toLocaleTimeString()}).`),
      codeView(a.code, 0, 'The program waiting for approval'),
      h('div', { class: 'row' },
        h('button', { type: 'button', class: 'primary approve', text: 'Approve', on: { click: () => decide(true) } }),
        h('label', { for: reason.id, text: 'Reason (optional)' }), reason,
        h('button', { type: 'button', class: 'refuse', text: 'Refuse', on: { click: () => decide(false) } })),
      error);
    this.approval.replaceChildren(box);
    box.querySelector('button.approve').focus();
    announce(`Question ${this.n}: a program waits for your approval.`);
  }

  /** showAnswer shows an AnalysisQuestion's answer (analyst.Answer) and the run's status. */
  showAnswer(q) {
    this.showStatus(q.run);
    const a = q.answer;
    if (!a) {
      if (q.run.answer) this.answer.replaceChildren(h('p', { class: 'answer-text', text: q.run.answer }));
      return;
    }
    revokeAll(this.urls);
    const parts = [];
    if (a.text) parts.push(h('p', { class: 'answer-text', text: a.text }));
    for (const c of a.charts || []) parts.push(this.chart(c));
    (a.tables || []).forEach((t, i) => {
      const label = t.name || `Table ${i + 1}`;
      parts.push(h('p', { class: 'table-title muted', text: `${label}: ${t.total_rows} rows × ${t.total_columns} columns` + (t.rows?.length < t.total_rows ? `, the first ${t.rows.length} shown` : '') }),
        valueTable(t.html, label));
    });
    const downloads = [...(a.charts || []), ...(a.files || [])];
    if (downloads.length) parts.push(this.downloads(downloads));
    if (a.cleaning?.length) parts.push(cleaningView(a.cleaning));
    if (a.code || a.output) {
      parts.push(h('details', { class: 'answer-code' }, h('summary', { text: 'The code and its output' }),
        a.code ? codeView(a.code, 0, 'The code of the answer') : null,
        a.output ? h('pre', { class: 'output stdout', 'aria-label': 'Its output', tabindex: '0', text: clip(a.output) }) : null));
    }
    this.answer.replaceChildren(...parts);
  }

  /** chart is a chart of the answer, fetched with the key and shown from a blob URL, its title as alt text and caption. */
  chart(c) {
    const title = c.title || c.name;
    const caption = [title, ...(c.axes || []).flatMap((ax) => [ax.xlabel && 'x: ' + ax.xlabel, ax.ylabel && 'y: ' + ax.ylabel]).filter(Boolean)];
    const fig = h('figure', { class: 'figure chart' }, h('p', { class: 'muted', text: 'Loading the chart ' + title + '…' }),
      h('figcaption', {}, h('strong', { text: caption[0] }), caption.length > 1 ? ' · ' + caption.slice(1).join(' · ') : ''));
    if (c.withheld || c.content_omitted || !CHART_TYPES.has(c.mime)) {
      fig.firstChild.textContent = `The chart ${title} is not shown${c.withheld ? ': ' + c.withheld : ''}.`;
      return fig;
    }
    this.fetchFile(c.name)
      .then((bytes) => {
        const url = URL.createObjectURL(new Blob([bytes], { type: c.mime }));
        this.urls.add(url);
        fig.firstChild.replaceWith(h('img', { src: url, alt: title }));
      })
      .catch((e) => { fig.firstChild.textContent = `The chart ${title} was not loaded: ${e.message}`; });
    return fig;
  }

  async fetchFile(name) {
    const resp = await request(`/v1/analyses/${encodeURIComponent(this.aid)}/files/${pathOf(name)}?question=${this.n}`);
    return new Uint8Array(await resp.arrayBuffer());
  }

  downloads(files) {
    return h('ul', { class: 'files-list downloads', 'aria-label': 'Downloads' }, files.map((f) => {
      const label = `${f.name} (${fmtBytes(f.size)})`;
      if (f.withheld) return h('li', { text: `${label}: withheld, ${f.withheld}` });
      const btn = h('button', { type: 'button', class: 'link', text: 'Download ' + label });
      btn.addEventListener('click', async () => {
        try {
          saveBytes(await this.fetchFile(f.name), f.mime, f.name);
        } catch (e) {
          btn.after(h('span', { class: 'form-error', role: 'alert', text: ` ${f.name}: ${e.message}` }));
        }
      });
      return h('li', {}, btn);
    }));
  }
}

function stepLabel(kind) {
  return {
    plan: 'Planning', model: 'Model', execute: 'Running', tool: 'Tool', feedback: 'Retry', verify: 'Verification',
  }[kind] || kind;
}

function decisionText(d) {
  const who = d.by === 'api' ? 'by you' : d.by === 'timeout' ? 'as no one decided in time' : 'as the question was cancelled';
  return `${d.approved ? 'Approved' : 'Refused'} ${who}` + (d.reason ? ': ' + d.reason : '');
}

function cleaningView(list) {
  return h('details', { class: 'cleaning' }, h('summary', { text: 'What cleaning changed' }),
    h('ul', {}, list.map((c) => h('li', {
      text: `${c.source} → ${c.output}: ${c.rows_in} rows in, ${c.rows_out} out, ${c.duplicates_removed} duplicates removed` +
        (c.warnings_total ? `, ${c.warnings_total} warnings` : ''),
    }))));
}
