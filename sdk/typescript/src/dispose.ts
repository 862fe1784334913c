// `await using` support: Symbol.asyncDispose where the runtime has it
// (Node >= 18.18 and 20, recent browsers); elsewhere, call close().

/** Closable is a handle whose close() ends what it holds on the server. */
export interface Closable {
  close(): Promise<void>;
}

/** defineAsyncDispose gives a class's instances [Symbol.asyncDispose], calling close(), when the runtime has the symbol. */
export function defineAsyncDispose(proto: Closable): void {
  const key = (Symbol as { asyncDispose?: symbol }).asyncDispose;
  if (typeof key !== 'symbol') return;
  Object.defineProperty(proto, key, {
    configurable: true,
    writable: true,
    value: function (this: Closable): Promise<void> {
      return this.close();
    },
  });
}
