// runs.js: the Run history view. GET /v1/runs lists the tenant's runs,
// newest first, filtered by status, language and time, a page at a time
// (its cursor); a run opens to its code, output, error, artifacts, limits,
// metrics, image digest and code hash. A run still queued or running is
// followed live (GET /v1/runs/{id}/events, resumed after a drop).

import { getJSON, q } from './api.js';
import { artifactList } from './artifacts.js';
import { append, clear, h } from './dom.js';
import {
  OutputPane, codeView, dataText, errorView, facts, fmtMS, fmtTime, limitFacts, metricFacts, revokeAll, statusBadge,
} from './render.js';
import { follow } from './sse.js';

const STATUSES = ['queued', 'running', 'ok', 'error', 'timeout', 'cpu_limit', 'memory_limit', 'output_limit', 'killed',
  'blocked', 'internal', 'interrupted'];
const LANGUAGES = ['python', 'javascript', 'bash'];
const PAGE = 50;

/** filters are kept while the page lives, so a run opened and closed keeps the list as it was. */
const filters = { status: '', language: '', since: '' };

/** render shows the runs, and run id's details when given. */
export async function render(main, [id], signal) {
  const urls = new Set();
  signal.addEventListener('abort', () => revokeAll(urls));
  const detail = h('section', { class: 'run-detail', 'aria-label': 'Run', tabindex: '-1' });
  const table = h('tbody');
  const more = h('button', { type: 'button', hidden: true, text: 'Load more' });
  const msg = h('p', { role: 'status', class: 'muted' });
  const form = filterForm(() => location.hash === '#/runs' ? load() : (location.hash = '#/runs'));
  main.append(h('section', { class: 'view runs', 'aria-labelledby': 'runs-title' },
    h('h1', { id: 'runs-title', text: 'Runs' }), form,
    h('div', { class: 'runs-grid' },
      h('div', { class: 'runs-list' },
        h('table', { class: 'grid' },
          h('caption', { class: 'sr-only', text: 'Runs, newest first' }),
          h('thead', {}, h('tr', {}, ['Created', 'Run', 'Language', 'Status', 'Wall', 'Source'].map((t) => h('th', { scope: 'col', text: t })))),
          table),
        msg, more),
      detail)));

  let cursor = '';
  const page = async (first) => {
    more.disabled = true;
    try {
      const since = filters.since ? new Date(filters.since).toISOString().replace(/\.\d+Z$/, 'Z') : '';
      const list = await getJSON('/v1/runs' + q({ status: filters.status, language: filters.language, since, limit: PAGE, cursor: first ? '' : cursor }), { signal });
      if (first) table.replaceChildren();
      for (const r of list.runs) table.append(runRow(r, r.id === id));
      cursor = list.next || '';
      more.hidden = !cursor;
      msg.textContent = table.childElementCount ? `${table.childElementCount} runs shown` : 'No runs match.';
    } catch (e) {
      if (!signal.aborted) msg.textContent = 'The runs could not be listed: ' + e.message;
    } finally {
      more.disabled = false;
    }
  };
  const load = () => page(true);
  more.addEventListener('click', () => page(false));
  const listed = load();
  if (id) await showRun(detail, id, urls, signal);
  else detail.append(h('p', { class: 'muted', text: 'Choose a run to see its code, output and artifacts.' }));
  await listed;
}

function filterForm(apply) {
  const select = (name, label, values) => {
    const s = h('select', { id: 'runs-' + name, name }, h('option', { value: '', text: 'any' }),
      values.map((v) => h('option', { value: v, text: v, selected: filters[name] === v })));
    return [h('label', { for: 'runs-' + name, text: label }), s];
  };
  const since = h('input', { type: 'datetime-local', id: 'runs-since', name: 'since', value: filters.since });
  const form = h('form', { class: 'row filters', role: 'search', 'aria-label': 'Filter the runs' },
    select('status', 'Status', STATUSES), select('language', 'Language', LANGUAGES),
    h('label', { for: 'runs-since', text: 'Since' }), since,
    h('button', { type: 'submit', class: 'primary', text: 'Apply' }),
    h('button', { type: 'reset', text: 'Clear' }));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const d = new FormData(form);
    Object.assign(filters, { status: d.get('status'), language: d.get('language'), since: d.get('since') });
    apply();
  });
  form.addEventListener('reset', () => {
    Object.assign(filters, { status: '', language: '', since: '' });
    setTimeout(apply);
  });
  return form;
}

function runRow(r, selected) {
  const source = r.agent_run ? 'agent ' + r.agent_run : r.session_id ? 'session ' + r.session_id : 'run';
  return h('tr', { 'aria-selected': selected ? 'true' : null },
    h('td', { text: fmtTime(r.created_at) }),
    h('td', {}, h('a', { href: '#/runs/' + encodeURIComponent(r.id), text: r.id })),
    h('td', { text: r.language }), h('td', {}, statusBadge(r.status)),
    h('td', { class: 'num', text: fmtMS(r.metrics?.wall_ms) }), h('td', { text: source }));
}

/** showRun fills detail with run id, following it live while it runs. */
async function showRun(detail, id, urls, signal) {
  detail.append(h('p', { role: 'status', text: 'Loading run ' + id + '…' }));
  let run;
  try {
    run = await getJSON('/v1/runs/' + encodeURIComponent(id), { signal });
  } catch (e) {
    if (!signal.aborted) clear(detail).append(h('p', { class: 'form-error', role: 'alert', text: `Run ${id} cannot be shown: ${e.message}` }));
    return;
  }
  if (signal.aborted) return;
  const live = run.status === 'queued' || run.status === 'running';
  fillRun(detail, run, urls, signal);
  detail.focus();
  if (!live) return;
  const stdout = detail.querySelector('.stdout');
  const stderr = detail.querySelector('.stderr');
  const liveState = detail.querySelector('.live');
  const panes = { stdout: new OutputPane('stdout', 'Standard output'), stderr: new OutputPane('stderr', 'Standard error') };
  stdout.replaceWith(panes.stdout.el);
  stderr.replaceWith(panes.stderr.el);
  try {
    // The stream starts over from the record's start: the output so far
    // comes again, then what is new.
    await follow(`/v1/runs/${encodeURIComponent(id)}/events`, (e) => {
      if (e.event === 'stdout' || e.event === 'stderr') panes[e.event].add(dataText(e.data));
      else if (e.event === 'run') liveState.textContent = 'Live: ' + e.data.status;
    }, signal);
    if (signal.aborted) return;
    const ended = await getJSON('/v1/runs/' + encodeURIComponent(id), { signal });
    revokeAll(urls);
    clear(detail);
    fillRun(detail, ended, urls, signal);
  } catch (e) {
    if (!signal.aborted) liveState.textContent = 'The live stream was lost: ' + e.message + '. Reload to see the run.';
  }
}

function fillRun(detail, run, urls, signal) {
  const live = run.status === 'queued' || run.status === 'running';
  const stdout = dataText(run.stdout);
  const stderr = dataText(run.stderr);
  // A stream the run wrote nothing on is said so in plain text: an empty
  // stderr is no error, and its red box would say it is.
  const outBlock = (cls, label, text, cut) => h('div', { class: 'out-block' },
    h('h3', { text: label + (cut ? ' (cut at the output limit)' : '') }),
    text || live ? h('pre', { class: 'output ' + cls, tabindex: '0', 'aria-label': label, text })
      : h('p', { class: 'muted output-empty', text: 'Nothing was written.' }));
  append(clear(detail), [
    h('h2', {}, 'Run ', h('span', { class: 'mono', text: run.id }), ' ', statusBadge(run.status)),
    live ? h('p', { class: 'live', role: 'status', text: 'Live: ' + run.status }) : null,
    run.reason ? h('p', { class: 'reason', text: run.reason }) : null,
    facts([
      ['Language', run.language], ['Image', run.image], ['Image digest', mono(run.image_digest)],
      ['Code hash', mono(run.code_hash)], ['Exit code', live ? '' : String(run.exit_code)], ['Signal', run.signal],
      ['Created', fmtTime(run.created_at)], ['Started', fmtTime(run.started_at)], ['Finished', fmtTime(run.finished_at)],
      ['Session', run.session_id ? h('a', { href: '#/notebook/' + encodeURIComponent(run.session_id), text: run.session_id }) : ''],
      ['Agent run', run.agent_run], ['Cache hit', run.cache_hit ? 'yes' : ''], ['Redactions', run.redactions ? String(run.redactions) : ''],
    ], 'Run'),
    h('h3', { text: 'Code' }), codeView(run.code || '', run.error?.line || 0, 'Code'),
    run.error ? errorView(run.error, run.code) : null,
    outBlock('stdout', 'Standard output', stdout, run.stdout_truncated),
    outBlock('stderr', 'Standard error', stderr, run.stderr_truncated),
    run.artifacts?.length ? [h('h3', { text: 'Artifacts' }), artifactList(run.id, run.artifacts, urls, signal)] : null,
    h('div', { class: 'two' },
      h('div', {}, h('h3', { text: 'Limits' }), limitFacts(run.limits)),
      h('div', {}, h('h3', { text: 'Metrics' }), metricFacts(run.metrics)))]);
}

function mono(s) {
  return s ? h('span', { class: 'mono', text: s }) : '';
}
