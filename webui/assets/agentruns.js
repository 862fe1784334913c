// agentruns.js: the Agent runs view. A form starts a software-engineering
// run from a repository archive (sweform.js). GET /v1/agent-runs lists the
// tenant's agent runs, newest first, a page at a time; a run opens to its
// status, task and facts, and then by its mode: a software-engineering run
// (mode "swe") to its change, its tests before and after and its steps
// (swe.js), a code run to its answer. A run still going on is followed live
// (GET /v1/agent-runs/{id}/events), its steps and output shown as they
// come, then shown as it ended.

import { getJSON, q } from './api.js';
import { append, clear, h } from './dom.js';
import { OutputPane, clip, dataText, facts, fmtTime, statusBadge } from './render.js';
import { follow } from './sse.js';
import { sweOutcome } from './swe.js';
import { sweForm } from './sweform.js';

const PAGE = 50;

/** render shows the agent runs, and run id's details when given. */
export async function render(main, [id], signal) {
  const detail = h('section', { class: 'run-detail agent-run', 'aria-label': 'Agent run', tabindex: '-1' });
  const table = h('tbody');
  const more = h('button', { type: 'button', hidden: true, text: 'Load more' });
  const msg = h('p', { role: 'status', class: 'muted' });
  main.append(h('section', { class: 'view agent-runs', 'aria-labelledby': 'agent-runs-title' },
    h('h1', { id: 'agent-runs-title', text: 'Agent runs' }),
    sweForm(),
    h('div', { class: 'runs-grid' },
      h('div', { class: 'runs-list' },
        h('table', { class: 'grid' },
          h('caption', { class: 'sr-only', text: 'Agent runs, newest first' }),
          h('thead', {}, h('tr', {}, ['Created', 'Run', 'Mode', 'Status', 'Task'].map((t) => h('th', { scope: 'col', text: t })))),
          table),
        msg, more),
      detail)));

  let cursor = '';
  const page = async (first) => {
    more.disabled = true;
    try {
      const list = await getJSON('/v1/agent-runs' + q({ limit: PAGE, cursor: first ? '' : cursor }), { signal });
      for (const r of list.agent_runs || []) table.append(runRow(r, r.id === id));
      cursor = list.next || '';
      more.hidden = !cursor;
      msg.textContent = table.childElementCount ? `${table.childElementCount} agent runs shown` : 'No agent runs yet.';
    } catch (e) {
      if (!signal.aborted) msg.textContent = 'The agent runs could not be listed: ' + e.message;
    } finally {
      more.disabled = false;
    }
  };
  more.addEventListener('click', () => page(false));
  const listed = page(true);
  if (id) await showRun(detail, id, signal);
  else detail.append(h('p', { class: 'muted', text: 'Choose an agent run to see its outcome and steps.' }));
  await listed;
}

function runRow(r, selected) {
  return h('tr', { 'aria-selected': selected ? 'true' : null },
    h('td', { text: fmtTime(r.created_at) }),
    h('td', {}, h('a', { href: '#/agent-runs/' + encodeURIComponent(r.id), text: r.id })),
    h('td', { text: r.mode || 'code' }), h('td', {}, statusBadge(r.status)),
    h('td', { class: 'task-cell', text: clip(r.task || '', 120) }));
}

/** ended reports whether an agent run's status is final. */
function ended(status) {
  return status !== 'running' && status !== 'awaiting_approval';
}

/** showRun fills detail with agent run id, following it live while it goes on. */
async function showRun(detail, id, signal) {
  detail.append(h('p', { role: 'status', text: 'Loading agent run ' + id + '…' }));
  const path = '/v1/agent-runs/' + encodeURIComponent(id);
  let run;
  try {
    run = await getJSON(path, { signal });
  } catch (e) {
    if (!signal.aborted) clear(detail).append(h('p', { class: 'form-error', role: 'alert', text: `Agent run ${id} cannot be shown: ${e.message}` }));
    return;
  }
  if (signal.aborted) return;
  fillRun(detail, run);
  detail.focus();
  if (ended(run.status)) return;
  const state = h('p', { class: 'live', role: 'status', text: 'Live: ' + run.status });
  const steps = h('ol', { class: 'live-steps' });
  const out = new OutputPane('stdout', 'Output of the commands');
  detail.append(state, steps, out.el);
  try {
    await follow(path + '/events', (e) => {
      if (e.event === 'stdout' || e.event === 'stderr') out.add(dataText(e.data));
      else if (e.event === 'step') steps.append(h('li', { text: `${e.data.kind} (step ${e.data.attempt}): ${e.data.message}` }));
      else if (e.event === 'code') steps.append(h('li', {}, h('code', { text: e.data.code })));
      else if (e.event === 'agent_run') state.textContent = 'Live: ' + e.data.status;
    }, signal);
    if (signal.aborted) return;
    fillRun(clear(detail), await getJSON(path, { signal }));
  } catch (e) {
    if (!signal.aborted) state.textContent = 'The live stream was lost: ' + e.message + '. Reload to see the run.';
  }
}

/** fillRun shows an agent run, by its mode. */
function fillRun(detail, run) {
  let trace = null;
  if (run.trace) trace = typeof run.trace === 'string' ? JSON.parse(run.trace) : run.trace;
  const swe = run.mode === 'swe';
  append(clear(detail), [
    h('h2', {}, 'Agent run ', h('span', { class: 'mono', text: run.id }), ' ', statusBadge(run.status)),
    run.reason ? h('p', { class: 'reason', text: run.reason }) : null,
    h('h3', { text: 'Task' }), h('p', { class: 'task-text', text: run.task || '' }),
    facts([
      ['Mode', run.mode || 'code'], ['Model', run.model], ['Image', run.image],
      ['Created', fmtTime(run.created_at)], ['Finished', fmtTime(run.finished_at)],
    ], 'Agent run'),
    swe && ended(run.status) ? sweOutcome(run.swe, trace) : null,
    !swe && run.answer ? [h('h3', { text: 'Answer' }), h('p', { class: 'answer-text', text: run.answer })] : null,
  ]);
  return detail;
}
