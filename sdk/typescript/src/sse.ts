// A reader of Server-Sent Events over a fetch body (a ReadableStream of
// bytes), keeping the fields that outlive an event (id, retry), as
// client/stream.go's sseReader does.

/** One event: its name ("message" when it had none) and its data lines joined by "\n". */
export interface SSEEvent {
  name: string;
  data: string;
}

/** The largest event the reader holds; the server's are output chunks (64 KiB before encoding) and results. */
const maxEventChars = 256 << 20;

/** SSEReader reads the events of one response. */
export class SSEReader {
  /** The last event ID seen (carried over from the previous connection until one comes). */
  id: string;
  /** The last retry: the server sent, in milliseconds; 0 before one. */
  retryMs = 0;
  /** Set when reading the body failed (the connection), as opposed to an event the caller refused. */
  failed = false;

  constructor(lastId = '') {
    this.id = lastId;
  }

  /** read yields the events of body until its end; it cancels body when the caller stops early. */
  async *read(body: ReadableStream<Uint8Array>): AsyncGenerator<SSEEvent, void> {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    let name = '';
    let data: string | null = null;
    let finished = false;
    try {
      for (;;) {
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (err) {
          this.failed = true;
          throw err;
        }
        if (chunk.done) {
          finished = true;
          return; // an event without its blank line is dropped, as the standard says
        }
        buf += decoder.decode(chunk.value, { stream: true });
        for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
          let line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          if (line.endsWith('\r')) line = line.slice(0, -1);
          if (line === '') {
            if (name !== '' || data !== null) yield { name: name || 'message', data: data ?? '' };
            name = '';
            data = null;
            continue;
          }
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          let value = colon < 0 ? '' : line.slice(colon + 1);
          if (value.startsWith(' ')) value = value.slice(1);
          switch (field) {
            case '': // a comment: the server's keep-alive
              break;
            case 'event':
              name = value.trim();
              break;
            case 'data':
              data = data === null ? value : data + '\n' + value;
              break;
            case 'id':
              if (!value.includes('\0')) this.id = value;
              break;
            case 'retry':
              if (/^\d+$/.test(value)) this.retryMs = Number(value);
              break;
          }
        }
        if (buf.length + (data?.length ?? 0) > maxEventChars) throw new Error(`an event of the stream exceeds ${maxEventChars} characters`);
      }
    } finally {
      if (!finished) await reader.cancel().catch(() => {});
      reader.releaseLock();
    }
  }
}
