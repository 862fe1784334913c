// profile.js: an analysis's profile (the JSON of analyst.Profile) as a
// page: per table its name, where it came from and how it was read, its
// shape, its columns (type, missing, distinct, inference, summary, top
// values, warnings), its warnings and its first rows. Every name and value
// came from the data: they reach the page as text only.

import { h } from './dom.js';
import { fmtBytes } from './render.js';

/** profileView shows profile (analyst.Profile); tables are <details>, open when open is true. */
export function profileView(profile, open = true) {
  const tables = (profile && profile.tables) || [];
  const box = h('div', { class: 'profile' });
  if (!tables.length) box.append(h('p', { class: 'muted', text: 'The profile holds no table.' }));
  for (const t of tables) box.append(tableView(t, profile.df === t.name, open));
  return box;
}

function tableView(t, isDF, open) {
  const title = h('summary', {}, h('span', { class: 'table-name mono', text: t.name }),
    isDF ? h('span', { class: 'muted', text: ' (also df)' }) : null,
    h('span', { class: 'muted', text: ' · ' + shape(t) }));
  const d = h('details', { class: 'profile-table', open: open || null, dataset: { table: t.name } }, title);
  if (t.error) {
    d.append(facts([['File', t.dataset + (t.sheet ? ', sheet ' + t.sheet : '')]]), h('p', { class: 'form-error', role: 'alert', text: t.error }));
    return d;
  }
  d.append(facts([
    ['File', t.dataset + (t.sheet ? ', sheet ' + t.sheet : '')],
    ['Read as', [t.format, ...Object.entries(t.reading || {}).map(([k, v]) => `${k} ${JSON.stringify(v)}`)].filter(Boolean).join(', ')],
    ['Shape', `${t.rows} rows × ${t.columns} columns`],
    ['Memory', t.memory_bytes ? fmtBytes(t.memory_bytes) : ''],
    ['Duplicate rows', t.duplicate_rows ? String(t.duplicate_rows) : ''],
  ]));
  if (t.warnings?.length) d.append(warnings(t.warnings, `Warnings about ${t.name}`));
  d.append(h('h3', { text: 'Columns' }), columnsTable(t));
  if (t.sample?.length) d.append(h('h3', { text: `First ${t.sample.length} rows` }), sampleTable(t));
  return d;
}

function shape(t) {
  return t.error ? 'not read' : `${t.rows} × ${t.columns}`;
}

function facts(pairs) {
  const dl = h('dl', { class: 'facts' });
  for (const [k, v] of pairs) if (v) dl.append(h('dt', { text: k }), h('dd', { text: v }));
  return dl;
}

function warnings(list, label) {
  return h('ul', { class: 'warnings', 'aria-label': label }, list.map((w) => h('li', { text: w })));
}

function columnsTable(t) {
  const head = ['Column', 'Type', 'Missing', 'Distinct', 'Summary', 'Top values', 'Warnings'];
  return h('div', { class: 'table-wrap', role: 'region', 'aria-label': `Columns of ${t.name}`, tabindex: '0' },
    h('table', { class: 'grid columns' },
      h('thead', {}, h('tr', {}, head.map((c) => h('th', { scope: 'col', text: c })))),
      h('tbody', {}, (t.column_profiles || []).map((c) => h('tr', {},
        h('th', { scope: 'row', class: 'mono', text: c.name }),
        h('td', {}, h('span', { class: 'mono', text: c.dtype }), c.inferred ? h('div', { class: 'muted', text: c.inferred }) : null),
        h('td', { class: 'num', text: pct(c.missing, t.rows) }),
        h('td', { class: 'num', text: String(c.distinct) }),
        h('td', { text: summary(c.summary) }),
        h('td', { text: (c.top || []).slice(0, 5).map((v) => `${v.value || '""'} (${v.count})`).join(', ') }),
        h('td', {}, c.warnings?.length ? warnings(c.warnings, `Warnings about ${c.name}`) : null))))));
}

function pct(n, rows) {
  if (!n) return '0';
  return rows ? `${n} (${Math.round((1000 * n) / rows) / 10}%)` : String(n);
}

/** summary shows a column's statistics in one line. */
export function summary(s) {
  if (!s) return '';
  if (s.min_text || s.max_text) return `${s.min_text || '?'} to ${s.max_text || '?'}`;
  const parts = [['mean', s.mean], ['std', s.std], ['min', s.min], ['median', s.median], ['max', s.max]];
  return parts.filter(([, v]) => v !== undefined && v !== null).map(([k, v]) => `${k} ${num(v)}`).join(', ');
}

function num(v) {
  return Number.isInteger(v) ? String(v) : Number(v.toPrecision(6)).toString();
}

function sampleTable(t) {
  const names = (t.column_profiles || []).map((c) => c.name);
  return h('div', { class: 'table-wrap sample', role: 'region', 'aria-label': `First rows of ${t.name}`, tabindex: '0' },
    h('table', {},
      h('thead', {}, h('tr', {}, names.map((n) => h('th', { scope: 'col', text: n })))),
      h('tbody', {}, t.sample.map((row) => h('tr', {}, row.map((v) => h('td', { text: v })))))));
}
