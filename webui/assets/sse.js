// sse.js: Server-Sent Events over fetch(). EventSource cannot send an
// Authorization header, so streams are read from a fetch() Response and
// parsed here, as the HTML standard parses an event stream.

import { authHeaders, errorOf } from './api.js';

/** MAX_EVENT is the largest event accepted, in UTF-16 code units (a result with its artifacts). */
export const MAX_EVENT = 256 << 20;

/**
 * parseEvents reads an event stream from a ReadableStream of text and
 * yields {event, data, id} for each event (data as sent, not decoded;
 * event "message" when unnamed). A "retry:" field is reported as
 * {retry: ms}. It throws when one event grows past max characters.
 */
export async function* parseEvents(textStream, max = MAX_EVENT) {
  const reader = textStream.getReader();
  let pending = []; // pieces of the line being read
  let pendingLen = 0;
  let skipLF = false; // the last chunk ended in \r: a \n first is its pair
  let data = [];
  let dataLen = 0;
  let event = '';
  let id = null;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return; // an event not ended by a blank line is dropped, as the standard says
      let start = 0;
      if (skipLF && value.startsWith('\n')) start = 1;
      skipLF = false;
      for (;;) {
        const nl = nextEOL(value, start);
        if (nl < 0) {
          const rest = value.slice(start);
          pending.push(rest);
          pendingLen += rest.length;
          if (pendingLen + dataLen > max) throw new Error(`an event is over ${max} characters`);
          break;
        }
        const line = pending.length ? pending.join('') + value.slice(start, nl) : value.slice(start, nl);
        pending = [];
        pendingLen = 0;
        start = nl + 1;
        if (value[nl] === '\r') {
          if (start === value.length) skipLF = true;
          else if (value[start] === '\n') start++;
        }
        if (line === '') {
          if (data.length) yield { event: event || 'message', data: data.join('\n'), id };
          data = [];
          dataLen = 0;
          event = '';
          continue;
        }
        if (line.startsWith(':')) continue; // a comment (keep-alive)
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let val = colon < 0 ? '' : line.slice(colon + 1);
        if (val.startsWith(' ')) val = val.slice(1);
        if (field === 'data') {
          data.push(val);
          dataLen += val.length + 1;
          if (dataLen > max) throw new Error(`an event is over ${max} characters`);
        } else if (field === 'event') event = val;
        else if (field === 'id' && !val.includes('\0')) id = val;
        else if (field === 'retry' && /^[0-9]+$/.test(val)) yield { retry: Number(val) };
      }
    }
  } finally {
    reader.releaseLock();
  }
}

function nextEOL(s, from) {
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 10 || c === 13) return i;
  }
  return -1;
}

/** events yields the events of a streaming Response, their data parsed as JSON. */
export async function* events(resp) {
  for await (const e of parseEvents(resp.body.pipeThrough(new TextDecoderStream()))) {
    if (e.retry !== undefined) {
      yield e;
      continue;
    }
    yield { event: e.event, id: e.id, data: JSON.parse(e.data) };
  }
}

/**
 * follow streams the events of GET path (a run's events), calling
 * onEvent({event, id, data}) for each, and resumes with Last-Event-ID
 * when the connection drops, after the server's retry delay. It returns
 * after the "result" or "error" event, or once the server answers 204 (no
 * more events); it stops, without error, when signal aborts. A stream
 * that breaks maxFailures times in a row without an event throws.
 */
export async function follow(path, onEvent, signal, maxFailures = 5) {
  let lastId = null;
  let retry = 1000;
  let failures = 0;
  while (!signal?.aborted) {
    const headers = authHeaders({ Accept: 'text/event-stream' });
    if (lastId !== null) headers.set('Last-Event-ID', lastId);
    let progressed = false;
    let lastErr = null;
    try {
      const resp = await fetch(path, { headers, signal, cache: 'no-store' });
      if (resp.status === 204) return;
      if (!resp.ok) throw await errorOf(resp);
      for await (const e of events(resp)) {
        if (e.retry !== undefined) {
          retry = e.retry;
          continue;
        }
        progressed = true;
        if (e.id !== null) lastId = e.id;
        onEvent(e);
        if (e.event === 'result' || e.event === 'error') return;
      }
    } catch (err) {
      if (signal?.aborted) return;
      if (err.name === 'ApiError' && err.status < 500) throw err;
      lastErr = err;
    }
    failures = progressed ? 1 : failures + 1;
    if (failures >= maxFailures) throw lastErr || new Error(`the event stream of ${path} ended ${maxFailures} times without its result`);
    await sleep(retry, signal);
  }
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    }, { once: true });
  });
}
