// A TCP proxy of the tests' own between the SDK and the server: it sees
// every request, can cut the connections it carries mid-stream, refuse
// new ones for a while, or swallow requests (pass them on, then close
// the connection instead of answering).
import net from 'node:net';

export class Proxy {
  /** The requests seen, in order: their request line and their headers, lower-cased. */
  requests = [];
  /** refuse: new connections are closed at once. */
  refuse = false;
  /** How many connections were refused. */
  refused = 0;
  /** swallow, if set, says which requests are passed on to the server and then answered by closing the connection: the server acts on them, the client gets no answer. */
  swallow = null;
  #conns = new Set();

  constructor(target) {
    this.target = new URL(target);
    this.server = net.createServer((client) => this.#accept(client));
  }

  /** start listens on a loopback port and returns the base URL to give the SDK. */
  async start() {
    await new Promise((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${this.server.address().port}`;
  }

  /** cutAll destroys every connection the proxy carries: both sides see them reset. */
  cutAll() {
    for (const [a, b] of this.#conns) {
      a.destroy();
      b.destroy();
    }
    this.#conns.clear();
  }

  /** count returns how many requests had this method and path (without the query). */
  count(method, path) {
    return this.requests.filter((r) => r.method === method && r.path.split('?')[0] === path).length;
  }

  async close() {
    this.cutAll();
    await new Promise((resolve) => this.server.close(resolve));
  }

  #accept(client) {
    if (this.refuse) {
      this.refused++;
      return client.destroy();
    }
    const upstream = net.connect(Number(this.target.port), this.target.hostname);
    const pair = [client, upstream];
    this.#conns.add(pair);
    let head = '';
    let mute = false; // the answer to a swallowed request is dropped, and the connection with it
    let skip = 0; // body bytes of the current request still to come
    client.on('data', (chunk) => {
      // Requests are told apart by their heads and Content-Length (the SDK's bodies are never chunked).
      head += chunk.toString('latin1');
      for (;;) {
        const n = Math.min(skip, head.length);
        head = head.slice(n);
        skip -= n;
        const endOfHead = head.indexOf('\r\n\r\n');
        if (skip > 0 || endOfHead < 0) break;
        const [line, ...fields] = head.slice(0, endOfHead).split('\r\n');
        const [method, path] = line.split(' ');
        const headers = {};
        for (const f of fields) {
          const i = f.indexOf(':');
          headers[f.slice(0, i).toLowerCase()] = f.slice(i + 1).trim();
        }
        const req = { method, path, headers };
        this.requests.push(req);
        head = head.slice(endOfHead + 4);
        skip = Number(headers['content-length'] ?? 0);
        if (this.swallow?.(req)) mute = true;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (mute) return end();
      client.write(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
      this.#conns.delete(pair);
    };
    client.on('close', end);
    upstream.on('close', end);
    client.on('error', end);
    upstream.on('error', end);
  }
}
