// swe.js: what a software-engineering agent run (mode "swe") produced:
// its change as a unified diff, the tests before and after it (the
// verdict), and the steps of its trace. The diff, the test names and the
// tool calls are the model's and the repository's text: every string goes
// through textContent (h's text), never parsed as markup.

import { h } from './dom.js';
import { clip, facts, fmtMS, statusBadge } from './render.js';

/** MAX_DIFF_LINES bounds the lines of a diff shown as lines; the rest is said to be left out. */
const MAX_DIFF_LINES = 20000;

/** sweOutcome shows a swe run's outcome (AgentRun.swe) and its trace. */
export function sweOutcome(outcome, trace) {
  const o = outcome || {};
  return [
    h('h3', { text: 'Tests' }),
    testSummary(o),
    testTable(o.before, o.after, o.fail_to_pass || [], o.broken || []),
    h('h3', { text: 'Change' }),
    diffView(o.diff || ''),
    trace ? [h('h3', { text: 'Steps' }), stepList(trace)] : null,
  ];
}

/** testSummary lists the verdict's facts: the runs' counts, how the change applied, and the tests that moved. */
function testSummary(o) {
  const run = (t) => (t ? `${t.passed} passed, ${t.failed} failed (${t.status}, exit ${t.exit_code}, ${fmtMS(t.duration_ms)})` : '');
  const ids = (list) => (list && list.length ? h('ul', { class: 'test-ids' }, list.map((id) => h('li', { class: 'mono', text: id }))) : '');
  return facts([
    ['Command', o.before?.command || o.after?.command || ''],
    ['Before', run(o.before)],
    ['After', run(o.after)],
    ['Applied with', o.after?.applied || ''],
    ['Did not apply', o.after?.apply_error || ''],
    ['Fail to pass', ids(o.fail_to_pass)],
    ['Broken', ids(o.broken)],
    ['Test files edited', ids(o.test_edits)],
    ['Submitted', o.submitted ? 'yes' : 'no'],
  ], 'Test results');
}

/** testTable shows each test's outcome before and after the change. */
function testTable(before, after, failToPass, broken) {
  const outcomes = new Map();
  for (const [i, t] of [before, after].entries()) {
    for (const c of t?.cases || []) {
      if (!outcomes.has(c.id)) outcomes.set(c.id, ['', '']);
      outcomes.get(c.id)[i] = c.outcome;
    }
  }
  if (!outcomes.size) return h('p', { class: 'muted', text: 'The test command reported no per-test results.' });
  const f2p = new Set(failToPass);
  const brk = new Set(broken);
  const rows = [...outcomes].map(([id, [b, a]]) => h('tr', { dataset: { test: id } },
    h('td', { class: 'mono', text: id }),
    h('td', {}, b ? statusBadge(b) : '—'),
    h('td', {}, a ? statusBadge(a) : '—'),
    h('td', { text: f2p.has(id) ? 'fail to pass' : brk.has(id) ? 'broken' : '' })));
  return h('table', { class: 'grid tests' },
    h('caption', { class: 'sr-only', text: 'Each test before and after the change' }),
    h('thead', {}, h('tr', {}, ['Test', 'Before', 'After', 'Change'].map((t) => h('th', { scope: 'col', text: t })))),
    h('tbody', {}, rows));
}

/**
 * diffView shows a unified diff, one element per line styled by its
 * kind: file headers, hunk headers, added and removed lines. The kind
 * is read from the line's first characters; the line itself is text.
 */
export function diffView(diff) {
  if (!diff) return h('p', { class: 'muted no-change', text: 'No change.' });
  const lines = diff.replace(/\n$/, '').split('\n');
  const shown = lines.slice(0, MAX_DIFF_LINES);
  const pre = h('pre', { class: 'diff', tabindex: '0', 'aria-label': 'The change, as a unified diff' },
    shown.map((line) => h('span', { class: 'diff-line ' + diffKind(line), text: clip(line, 4000) + '\n' })));
  if (lines.length > shown.length) pre.append(h('span', { class: 'diff-line diff-meta', text: `… ${lines.length - shown.length} more lines not shown\n` }));
  return pre;
}

/** diffKind is the class of a diff's line. */
function diffKind(line) {
  if (line.startsWith('diff --git ') || line.startsWith('+++ ') || line.startsWith('--- ') || line.startsWith('index ')) return 'diff-meta';
  if (line.startsWith('@@')) return 'diff-hunk';
  if (line.startsWith('+')) return 'diff-add';
  if (line.startsWith('-')) return 'diff-del';
  return 'diff-context';
}

/** stepList shows the trace's steps: model calls, tool calls with their arguments and output, notes. */
function stepList(trace) {
  const steps = trace.steps || trace.trace?.steps || [];
  if (!steps.length) return h('p', { class: 'muted', text: 'The trace has no steps.' });
  return h('ol', { class: 'swe-steps' }, steps.map((s) => h('li', { class: 'swe-step', dataset: { kind: s.kind || '' } },
    h('p', { class: 'step-head' },
      h('span', { class: 'badge step-kind', text: s.kind || 'step' }), ' ',
      s.tool ? h('span', { class: 'mono tool-name', text: s.tool }) : null, ' ',
      s.note ? h('span', { text: s.note }) : null,
      s.reply?.tool_calls?.length ? h('span', { class: 'mono', text: 'calls ' + s.reply.tool_calls.map((c) => c.name).join(', ') }) : null,
      s.duration_ms ? h('span', { class: 'muted', text: ` · ${fmtMS(s.duration_ms)}` }) : null),
    s.args ? h('pre', { class: 'output tool-args', tabindex: '0', 'aria-label': 'Arguments', text: clip(s.args, 20000) }) : null,
    s.output ? h('pre', { class: 'output tool-output', tabindex: '0', 'aria-label': 'Output', text: clip(s.output, 20000) }) : null,
    s.reply?.text ? h('p', { class: 'model-text', text: clip(s.reply.text, 20000) }) : null)));
}
