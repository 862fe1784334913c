// api.js: the one client of Crucible's public /v1 API that every view
// shares. It adds the API key (kept in this tab's sessionStorage only), asks
// for a key when the server answers 401, and turns error answers into
// ApiError. Nothing here uses a private endpoint.

const KEY_ITEM = 'crucible.apiKey';

/** ApiError is an error answer of the API: {"error": {code, message, field, rule}}. */
export class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `HTTP ${status}`);
    this.name = 'ApiError';
    this.status = status;
    this.code = e.code || '';
    this.field = e.field || '';
    this.rule = e.rule || '';
  }
}

/** getKey returns the API key of this tab, or "". */
export function getKey() {
  return sessionStorage.getItem(KEY_ITEM) || '';
}

/** setKey keeps key for this tab and tells the views the tenant may have changed. */
export function setKey(key) {
  if (key) sessionStorage.setItem(KEY_ITEM, key);
  else sessionStorage.removeItem(KEY_ITEM);
  window.dispatchEvent(new CustomEvent('crucible:key'));
}

let askForKey = null;

/**
 * onKeyNeeded sets the function called when the server refuses a request
 * with 401: ask(message, hadKey) resolves to true once a working key is
 * set, false if the user gave up.
 */
export function onKeyNeeded(ask) {
  askForKey = ask;
}

/** errorOf reads an error answer. */
export async function errorOf(resp) {
  let body = null;
  try {
    body = await resp.json();
  } catch {
    // not JSON: the status says enough
  }
  return new ApiError(resp.status, body);
}

/** authHeaders returns headers with the API key, if any, set. */
export function authHeaders(init) {
  const h = new Headers(init);
  const key = getKey();
  if (key) h.set('Authorization', 'Bearer ' + key);
  return h;
}

/**
 * request sends a request to the API and answers its Response when it is
 * 2xx; otherwise it throws an ApiError. opts: method, json (a value sent as
 * the JSON body), body (sent as is), headers, signal. On 401 it asks for a
 * key and, given one, sends the request again.
 */
export async function request(path, opts = {}) {
  for (;;) {
    const headers = authHeaders(opts.headers);
    let body = opts.body;
    if (opts.json !== undefined) {
      headers.set('Content-Type', 'application/json');
      body = JSON.stringify(opts.json);
    }
    const hadKey = headers.has('Authorization');
    const resp = await fetch(path, { method: opts.method || 'GET', headers, body, signal: opts.signal, cache: 'no-store' });
    if (resp.ok) return resp;
    const err = await errorOf(resp);
    if (resp.status === 401 && askForKey && (await askForKey(err.message, hadKey))) continue;
    throw err;
  }
}

/** getJSON answers the JSON body of GET path (or of the request opts describe). */
export async function getJSON(path, opts) {
  const resp = await request(path, opts);
  return resp.status === 204 ? null : resp.json();
}

/** q builds a query string from the non-empty values of params ("" if none). */
export function q(params) {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') s.set(k, v);
  const str = s.toString();
  return str ? '?' + str : '';
}

/** pathOf encodes a file or artifact name (it may hold slashes) for a URL path. */
export function pathOf(name) {
  return name.split('/').map(encodeURIComponent).join('/');
}

/** health answers the server's GET /healthz status, or throws. */
export async function health(signal) {
  const resp = await fetch('/healthz', { signal, cache: 'no-store' });
  if (!resp.ok) throw new Error(`HTTP ${resp.status}`);
  return (await resp.json()).status;
}

/** checkKey reports the error a key gets from the API, or null if it works. */
export async function checkKey(key) {
  const resp = await fetch('/v1/sessions', { headers: { Authorization: 'Bearer ' + key }, cache: 'no-store' });
  return resp.ok ? null : errorOf(resp);
}
