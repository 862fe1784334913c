// The API's Data: bytes sent as a JSON string when they are valid UTF-8,
// else as {"base64": "..."}. Works the same in Node and in browsers
// (TextEncoder, TextDecoder, atob and btoa are globals of both).

import type { components } from './openapi.js';

/** Data is a byte string as the API sends it: text, or base64 for bytes that are not UTF-8. */
export type Data = components['schemas']['Data'];

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** toBytes decodes the API's Data (null and undefined read as empty) into bytes. */
export function toBytes(d: Data | null | undefined): Uint8Array {
  if (d == null) return new Uint8Array(0);
  if (typeof d === 'string') return encoder.encode(d);
  return fromBase64(d.base64);
}

/** toText decodes the API's Data into a string; bytes that are not UTF-8 become U+FFFD. */
export function toText(d: Data | null | undefined): string {
  if (d == null) return '';
  if (typeof d === 'string') return d;
  return decoder.decode(fromBase64(d.base64));
}

/** fromInput encodes a string or bytes as the API's Data (bytes always as base64, which the server reads exactly). */
export function fromInput(v: string | Uint8Array): Data {
  return typeof v === 'string' ? v : { base64: toBase64(v) };
}

/** fromBase64 decodes standard, padded base64. */
export function fromBase64(s: string): Uint8Array {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** toBase64 encodes bytes as standard, padded base64. */
export function toBase64(b: Uint8Array): string {
  let bin = '';
  const step = 0x8000; // String.fromCharCode takes its arguments on the stack
  for (let i = 0; i < b.length; i += step) bin += String.fromCharCode(...b.subarray(i, i + step));
  return btoa(bin);
}

/** utf8 encodes a string as UTF-8. */
export function utf8(s: string): Uint8Array {
  return encoder.encode(s);
}
