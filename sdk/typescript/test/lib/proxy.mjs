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
    if (this.refuse) return client.destroy();
    const upstream = net.connect(Number(this.target.port), this.target.hostname);
    const pair = [client, upstream];
    this.#conns.add(pair);
    let head = '';
    let mute = false; // the answer to a swallowed request is dropped, and the connection with it
    client.on('data', (chunk) => {
      // Requests are told apart by their heads; the tests' bodies are small JSON without "HTTP/1.1\r\n".
      head += chunk.toString('latin1');
      let m;
      while ((m = /^(GET|POST|PUT|DELETE|HEAD) (\S+) HTTP\/1\.1\r\n([\s\S]*?)\r\n\r\n/m.exec(head))) {
        const headers = {};
        for (const line of m[3].split('\r\n')) {
          const i = line.indexOf(':');
          headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
        }
        const req = { method: m[1], path: m[2], headers };
        this.requests.push(req);
        head = head.slice(m.index + m[0].length);
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
