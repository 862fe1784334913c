// sanitize.js: showing a program's HTML table (a cell result's value_html,
// as pandas writes a DataFrame) without trusting it.
//
// Why a sanitiser and not a sandboxed iframe: the table belongs in the
// page's flow (its width, the page's styles, keyboard scrolling, screen
// readers reading it as a table), and an iframe would need frame-src in the
// page's policy and a guessed height.
//
// Why not the browser's HTML parser (DOMParser, <template>, setHTML): the
// program's markup is never given to any parser of the browser. Even an
// inert parse checks each inline handler and style attribute against the
// page's Content-Security-Policy and reports it (every pandas table has a
// style attribute), and a parser's quirks are not ours to audit. Instead,
// a tokenizer splits the markup into tags and text, and the table is built
// anew in this page: only table elements (created by name from a fixed
// list), only the colspan, rowspan, span and scope attributes (checked),
// and text (text nodes, entities decoded). Everything else is dropped, its
// text kept (a <b> in a cell), or, inside script, style and the like,
// dropped with it. A tokenizer mistake can misshape the table; it cannot
// put an element, an attribute or a script of the program's in the page.

const KEPT = new Set(['table', 'caption', 'colgroup', 'col', 'thead', 'tbody', 'tfoot', 'tr', 'th', 'td']);
const VOID = new Set(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'param', 'source', 'track', 'wbr']);
const RAW = new Set(['script', 'style', 'textarea', 'title', 'xmp', 'iframe', 'noembed', 'noframes', 'noscript', 'template', 'svg', 'math', 'select', 'object']);
const ENTITIES = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'", nbsp: '\u00a0' };

const NAME = /[A-Za-z][A-Za-z0-9-]*/y;
const ATTR = /([^\s"'>\/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?/g;

/** MAX_DEPTH bounds the elements kept open; deeper ones are unwrapped (so closing one is linear). */
const MAX_DEPTH = 256;

/** MAX_NODES bounds the nodes one table may have in the page. */
export const MAX_NODES = 50000;

/** decode replaces character references in s by their characters. */
export function decode(s) {
  return s.replace(/&(#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z]{2,8});/g, (m, ref) => {
    if (ref[0] !== '#') return ENTITIES[ref] ?? m;
    const n = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
    return n > 0 && n <= 0x10ffff && !(n >= 0xd800 && n <= 0xdfff) ? String.fromCodePoint(n) : '\ufffd';
  });
}

/**
 * sanitizeTable returns a DocumentFragment of html's tables and text,
 * rebuilt from table elements and text nodes only (see above), and whether
 * it was cut at maxNodes nodes.
 */
export function sanitizeTable(html, maxNodes = MAX_NODES) {
  const src = String(html);
  const out = document.createDocumentFragment();
  // open: the elements open in the source, each with the node its
  // content goes to (itself if kept, else its parent's) and whether a
  // table is open at it.
  const open = [{ name: '', node: out, inTable: false }];
  let budget = maxNodes;
  let i = 0;
  const top = () => open[open.length - 1];
  while (i < src.length) {
    if (budget <= 0) return { fragment: out, truncated: true };
    if (src.startsWith('<!--', i)) {
      const end = src.indexOf('-->', i + 4);
      i = end < 0 ? src.length : end + 3;
      continue;
    }
    if (src[i] === '<' && (src[i + 1] === '!' || src[i + 1] === '?')) {
      const end = src.indexOf('>', i);
      i = end < 0 ? src.length : end + 1;
      continue;
    }
    const tag = src[i] === '<' ? scanTag(src, i) : null;
    if (!tag) {
      // Text, up to the next '<' that is not this one.
      let end = src.indexOf('<', i + 1);
      if (end < 0) end = src.length;
      const text = decode(src.slice(i, end));
      if (text.trim() !== '') {
        top().node.append(document.createTextNode(text));
        budget--;
      }
      i = end;
      continue;
    }
    if (tag.end < 0) break; // a tag the input ends in: dropped, as HTML does
    i = tag.end;
    const { closing, name, attrs } = tag;
    if (closing) {
      const at = open.findLastIndex((e) => e.name === name);
      if (at > 0) open.length = at;
      continue;
    }
    if (RAW.has(name)) {
      // Its content is not markup, and not shown: skip to its end tag.
      const endTag = new RegExp('</' + name + '[\\s/>]', 'gi');
      endTag.lastIndex = i;
      const m = endTag.exec(src);
      if (!m) break;
      const close = src.indexOf('>', m.index);
      i = close < 0 ? src.length : close + 1;
      continue;
    }
    const parent = top();
    let node = parent.node;
    const keep = KEPT.has(name) && (name === 'table' || parent.inTable);
    if (keep) {
      node = document.createElement(name);
      copyAttributes(attrs, node, name);
      parent.node.append(node);
      budget--;
    }
    if (!VOID.has(name) && !attrs.trimEnd().endsWith('/') && open.length < MAX_DEPTH) {
      open.push({ name, node, inTable: parent.inTable || (keep && name === 'table') });
    }
  }
  return { fragment: out, truncated: false };
}

/**
 * scanTag reads the tag at src[i] ('<'): {closing, name, attrs, end}, end
 * the index after its '>' or -1 if the input ends inside it; null if no
 * tag starts there (a '<' of text). It reads each character once: quoted
 * attribute values may hold '>', as in HTML.
 */
function scanTag(src, i) {
  let j = i + 1;
  const closing = src[j] === '/';
  if (closing) j++;
  NAME.lastIndex = j;
  const m = NAME.exec(src);
  if (!m) return null;
  j = NAME.lastIndex;
  let quote = '';
  for (let k = j; k < src.length; k++) {
    const c = src[k];
    if (quote) {
      if (c === quote) quote = '';
    } else if (c === '"' || c === "'") {
      // A quote opens a value only after '=' (spaces between allowed).
      if (/=\s*$/.test(src.slice(Math.max(j, k - 16), k))) quote = c;
    } else if (c === '>') {
      return { closing, name: m[0].toLowerCase(), attrs: src.slice(j, k), end: k + 1 };
    }
  }
  return { closing, name: m[0].toLowerCase(), attrs: '', end: -1 };
}

function copyAttributes(attrs, to, name) {
  for (const [, attr, dq, sq, bare] of attrs.matchAll(ATTR)) {
    const key = attr.toLowerCase();
    const v = decode(dq ?? sq ?? bare ?? '');
    if ((key === 'colspan' || key === 'rowspan' || key === 'span') && /^[0-9]{1,4}$/.test(v)) to.setAttribute(key, v);
    if (key === 'scope' && name === 'th' && ['row', 'col', 'rowgroup', 'colgroup'].includes(v)) to.setAttribute(key, v);
  }
}
