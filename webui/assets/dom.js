// dom.js: building the page's DOM. Text is always set as text (text
// nodes, textContent); nothing here parses markup, so a string from a
// program can never become an element or a script.

/**
 * h creates an element. props: "class", "text" (its textContent), "on"
 * ({event: handler}), "dataset" ({key: value}), any other key an
 * attribute (skipped when null, undefined or false; true sets it empty).
 * children: nodes, strings (as text nodes), arrays of them, or
 * null/undefined/false (skipped).
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = String(v);
    else if (k === 'on') for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

/** append adds children (as h takes them) to el and returns el. */
export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/**
 * withCode returns text as nodes for h or append, each part of it
 * between a pair of backticks (a command, as messages quote one) as a
 * <code> element, so that no raw backtick shows. Every part is text: no
 * markup is parsed. Text with an unpaired backtick is left as it is.
 */
export function withCode(text) {
  const parts = String(text).split('`');
  if (parts.length % 2 === 0) return [String(text)];
  return parts.map((p, i) => (i % 2 ? h('code', { text: p }) : p)).filter((p) => p !== '');
}

/** clear removes every child of el and returns it. */
export function clear(el) {
  el.replaceChildren();
  return el;
}

/** announce says msg to screen readers through the page's live region. */
export function announce(msg) {
  const live = document.getElementById('live');
  if (live) live.textContent = msg;
}
