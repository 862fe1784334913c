// render.js: the pieces the views share to show what a program produced:
// its output as text, its tables (sanitised), its figures (as images, from
// bytes, never as markup), its errors with the failing line marked, and
// the facts of a run (limits, metrics). Every string from a program goes
// through textContent.

import { h } from './dom.js';
import { sanitizeTable } from './sanitize.js';

/** IMAGE_TYPES are the artifact types shown inline; SVG, like HTML, never is (it can hold script). */
export const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** MAX_TEXT bounds the characters of one output shown in the page. */
export const MAX_TEXT = 1 << 20;

/** dataBytes decodes a sandbox.Data ("text" or {"base64": "..."}) to bytes. */
export function dataBytes(d) {
  if (d === null || d === undefined) return new Uint8Array();
  if (typeof d === 'string') return new TextEncoder().encode(d);
  const bin = atob(d.base64 || '');
  const b = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) b[i] = bin.charCodeAt(i);
  return b;
}

/** dataText decodes a sandbox.Data to text, invalid UTF-8 shown as U+FFFD. */
export function dataText(d) {
  if (d === null || d === undefined) return '';
  if (typeof d === 'string') return d;
  return new TextDecoder().decode(dataBytes(d));
}

/** clip cuts text to MAX_TEXT characters, saying so. */
export function clip(text, max = MAX_TEXT) {
  return text.length <= max ? text : text.slice(0, max) + `\n… (${text.length - max} more characters not shown)`;
}

/** OutputPane is a <pre> a stream of output is appended to, up to MAX_TEXT characters. */
export class OutputPane {
  constructor(stream, label) {
    this.node = document.createTextNode('');
    this.len = 0;
    this.el = h('pre', { class: 'output ' + stream, 'aria-label': label, hidden: true, tabindex: '0' }, this.node);
  }

  /** add appends text. */
  add(text) {
    if (!text) return;
    this.el.hidden = false;
    if (this.len >= MAX_TEXT) return;
    const room = MAX_TEXT - this.len;
    this.node.appendData(text.length <= room ? text : text.slice(0, room) + '\n… (more output not shown)');
    this.len += text.length;
  }

  /** set replaces the text. */
  set(text) {
    this.node.data = '';
    this.len = 0;
    this.el.hidden = true;
    this.add(text);
  }
}

/** valueTable shows a value's HTML table, sanitised, in a scrollable, focusable region. */
export function valueTable(html, label) {
  const { fragment, truncated } = sanitizeTable(html);
  return h('div', { class: 'table-wrap', role: 'region', 'aria-label': label, tabindex: '0' },
    fragment, truncated ? h('p', { class: 'note', text: 'The table was cut: it has too many cells to show.' }) : null);
}

/**
 * displayView shows one of a cell's displays (a sandbox.Display): an HTML
 * table sanitised as a value's is (sanitize.js), a PNG as an image from
 * its bytes, JSON indented; every other form (HTML that is no table, SVG,
 * Markdown, plain text, data the server omitted) as the object's text,
 * through textContent. Program output is never given to the page as
 * markup.
 */
export function displayView(d, label, urls) {
  const text = (t) => h('pre', { class: 'output display', 'aria-label': label, text: clip(t) });
  if (d.omitted) {
    return h('div', { class: 'display' }, text(d.text || ''), h('p', { class: 'note', text: `(${d.mime} not shown: ${d.omitted})` }));
  }
  const data = dataText(d.data);
  if (d.mime === 'text/html' && /<table[\s>]/i.test(data)) return valueTable(data, label);
  if (d.mime === 'image/png') {
    return figure(dataBytes(d.data), d.mime, label, urls) || text(d.text || '');
  }
  if (d.mime === 'application/json') {
    try {
      return text(JSON.stringify(JSON.parse(data), null, 2));
    } catch {
      return text(data);
    }
  }
  if (d.mime === 'text/markdown') return text(data);
  return text(d.text || '');
}

/**
 * figure returns an <img> showing image bytes of an allowed type through
 * a blob URL, registered in urls (a Set the caller revokes when the image
 * goes), or null for any other type.
 */
export function figure(bytes, mime, name, urls) {
  if (!IMAGE_TYPES.has(mime)) return null;
  const url = URL.createObjectURL(new Blob([bytes], { type: mime }));
  urls.add(url);
  return h('figure', { class: 'figure' }, h('img', { src: url, alt: 'Figure ' + name }), h('figcaption', { text: name }));
}

/** revokeAll revokes the blob URLs in urls and empties it. */
export function revokeAll(urls) {
  for (const u of urls) URL.revokeObjectURL(u);
  urls.clear();
}

/** saveBytes offers bytes as a download called after the last part of name. */
export function saveBytes(bytes, mime, name) {
  const url = URL.createObjectURL(new Blob([bytes], { type: mime || 'application/octet-stream' }));
  const a = h('a', { href: url, download: baseName(name) });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

/** baseName is the last part of a slash-separated name. */
export function baseName(name) {
  return String(name).split('/').pop() || 'download';
}

/**
 * codeView shows code with line numbers, the line errorLine (1-based; 0
 * for none) marked as the failing one.
 */
export function codeView(code, errorLine, label) {
  const lines = code.split('\n');
  const ol = h('ol', { class: 'code', 'aria-label': label });
  lines.forEach((line, i) => {
    const failing = i + 1 === errorLine;
    ol.append(h('li', { class: failing ? 'error-line' : null, 'aria-current': failing ? 'true' : null },
      failing ? h('span', { class: 'sr-only', text: 'Error on this line: ' }) : null, line || ' '));
  });
  return ol;
}

/**
 * errorView shows a program's structured error: type and message, the
 * failing line (with its neighbours from code) marked, the platform's
 * hint and the traceback, folded.
 */
export function errorView(err, code) {
  const where = err.line ? ` (line ${err.line}${err.column ? ', column ' + err.column : ''})` : '';
  const box = h('div', { class: 'error-box', role: 'group', 'aria-label': 'Error' },
    h('p', { class: 'error-title' }, h('strong', { text: err.type || 'Error' }), ': ', err.message || '', where));
  if (err.line && code) {
    const lines = code.split('\n');
    const from = Math.max(1, err.line - 2);
    const to = Math.min(lines.length, err.line + 2);
    const ol = h('ol', { class: 'code excerpt', start: String(from), 'aria-label': 'The failing line and its neighbours' });
    for (let n = from; n <= to; n++) {
      const failing = n === err.line;
      ol.append(h('li', { class: failing ? 'error-line' : null },
        failing ? h('span', { class: 'sr-only', text: 'Error on this line: ' }) : null, lines[n - 1] || ' '));
    }
    box.append(ol);
  }
  if (err.hint) box.append(h('p', { class: 'hint', text: err.hint }));
  if (err.traceback) box.append(h('details', {}, h('summary', { text: 'Traceback' }), h('pre', { class: 'output', text: clip(err.traceback) })));
  return box;
}

/** fmtBytes shows a byte count in binary units. */
export function fmtBytes(n) {
  if (n === undefined || n === null) return '';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = Number(n);
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return (i === 0 ? String(v) : v.toFixed(v < 10 ? 1 : 0)) + ' ' + units[i];
}

/** fmtMS shows a duration in milliseconds. */
export function fmtMS(ms) {
  if (ms === undefined || ms === null) return '';
  return ms < 1000 ? `${Math.round(ms * 10) / 10} ms` : `${(ms / 1000).toFixed(2)} s`;
}

/** fmtTime shows an RFC 3339 time in the browser's locale. */
export function fmtTime(t) {
  if (!t) return '';
  const d = new Date(t);
  return isNaN(d) ? String(t) : d.toLocaleString();
}

/** facts is a description list of [label, value] pairs, empty values left out. */
export function facts(pairs, label) {
  const dl = h('dl', { class: 'facts', 'aria-label': label });
  for (const [k, v] of pairs) {
    if (v === undefined || v === null || v === '') continue;
    dl.append(h('dt', { text: k }), h('dd', {}, v));
  }
  return dl;
}

/** limitFacts lists a sandbox.Limits. */
export function limitFacts(l = {}) {
  return facts([
    ['Wall time', l.wall_time_ms ? fmtMS(l.wall_time_ms) : ''],
    ['CPU time', l.cpu_time_ms ? fmtMS(l.cpu_time_ms) : ''],
    ['Memory', l.memory_bytes ? fmtBytes(l.memory_bytes) : ''],
    ['Processes', l.processes ? String(l.processes) : ''],
    ['Output', l.output_bytes ? fmtBytes(l.output_bytes) : ''],
    ['Disk', l.disk_bytes ? fmtBytes(l.disk_bytes) : ''],
    ['Artifacts', l.artifact_bytes ? fmtBytes(l.artifact_bytes) : ''],
    ['File size', l.file_size_bytes ? fmtBytes(l.file_size_bytes) : ''],
    ['Open files', l.open_files ? String(l.open_files) : ''],
  ], 'Limits');
}

/** metricFacts lists a sandbox.Metrics. */
export function metricFacts(m = {}) {
  return facts([
    ['Wall', fmtMS(m.wall_ms)],
    ['CPU', fmtMS(m.cpu_ms)],
    ['Peak memory', m.peak_memory_bytes ? fmtBytes(m.peak_memory_bytes) : ''],
    ['Queued', fmtMS(m.queue_ms)],
    ['Sandbox start', fmtMS(m.start_ms)],
  ], 'Metrics');
}

/** statusBadge shows a run or cell status. */
export function statusBadge(status) {
  return h('span', { class: 'badge status-' + String(status).replace(/[^a-z_]/g, ''), text: status });
}
