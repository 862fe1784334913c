// Errors: every failure the SDK reports is a CrucibleError. A request the
// server answered with a status other than 2xx is an APIError (or one of
// its subclasses, by status) carrying the API's JSON error
// {"error": {"code", "message", "field", "rule"}}; a request that got no
// answer is a ConnectionError. A program that fails is not an error: it is
// a result whose status says so (see RunResult).

import type { components } from './openapi.js';

/** ErrorCode is one of the API's stable error codes, such as "invalid_request". */
export type ErrorCode = components['schemas']['ErrorCode'];

/** ErrorBody is the API's JSON error, as every non-2xx answer carries it. */
export type ErrorBody = components['schemas']['Error'];

/** CrucibleError is the base class of every error the SDK throws. */
export class CrucibleError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** What an APIError is made of. */
export interface APIErrorInit {
  /** The HTTP status, such as 400 or 429. */
  status: number;
  /** The API's stable error code; "" when the answer was not the API's JSON error (a proxy's page, say). */
  code: ErrorCode | '';
  /** Explains the error (the start of the body when it was not JSON). */
  message: string;
  /** The request field, query parameter or header at fault, such as "limits.memory_bytes"; "" when none is named. */
  field?: string;
  /** The rule field breaks; "" when none is named. */
  rule?: string;
  /** How long the server asked to wait before retrying (its Retry-After header), in milliseconds; undefined when it did not say. */
  retryAfterMs?: number;
  /** The method and path of the request, such as "POST /v1/runs", for the message. */
  request?: string;
}

/**
 * APIError is a request the server answered with a status other than 2xx.
 * Its fields come from the API's JSON error. Subclasses by status:
 * AuthenticationError (401), PermissionDeniedError (403), NotFoundError
 * (404), ConflictError (409), SessionClosedError (410), ValidationError
 * (400, 413, 422), RateLimitError (429), ServerError (5xx).
 */
export class APIError extends CrucibleError {
  /** The HTTP status. */
  readonly status: number;
  /** The API's stable error code, "" when the body was not the API's JSON error. */
  readonly code: ErrorCode | '';
  /** The field at fault, "" when none. */
  readonly field: string;
  /** The rule the field breaks, "" when none. */
  readonly rule: string;
  /** The Retry-After the server sent, in milliseconds. */
  readonly retryAfterMs: number | undefined;
  /** The API's message, without the status and field this error's message adds. */
  readonly apiMessage: string;

  constructor(init: APIErrorInit) {
    let msg = `crucible: ${init.request ? init.request + ': ' : ''}${init.status}${init.code ? ' ' + init.code : ''}: ${init.message}`;
    if (init.field) msg += ` (field ${init.field}${init.rule ? ': ' + init.rule : ''})`;
    super(msg);
    this.status = init.status;
    this.code = init.code;
    this.apiMessage = init.message;
    this.field = init.field ?? '';
    this.rule = init.rule ?? '';
    this.retryAfterMs = init.retryAfterMs;
  }
}

/** AuthenticationError is a 401: no API key, or one the server does not hold (revoked, mistyped). */
export class AuthenticationError extends APIError {}
/** PermissionDeniedError is a 403: forbidden, such as a file withheld because it holds a secret. */
export class PermissionDeniedError extends APIError {}
/** NotFoundError is a 404: no such run, session, file or route, or another tenant's (tenants never see each other's). */
export class NotFoundError extends APIError {}
/** ConflictError is a 409: an approval already decided, a question while another is answered. */
export class ConflictError extends APIError {}
/** SessionClosedError is a 410: the session or analysis was closed, or expired when idle. */
export class SessionClosedError extends APIError {}
/** ValidationError is a refused request: 400 (invalid_request), 413 (payload_too_large) or 422 (unsuitable_image); field and rule say what is wrong. */
export class ValidationError extends APIError {}
/** RateLimitError is a 429: the run queue, the sessions or the agent runs allowed are full; retryAfterMs says when to retry. */
export class RateLimitError extends APIError {}
/** ServerError is a 5xx: the server failed, or is not configured for the request (501 not_configured: no model). */
export class ServerError extends APIError {}

/** ConnectionError is a request that got no answer: refused, reset, or cut before its end. */
export class ConnectionError extends CrucibleError {}

/** ConnectionTimeoutError is a request that got no answer within its timeout (timeoutMs). */
export class ConnectionTimeoutError extends ConnectionError {}

/** errorClass picks the APIError subclass of a status. */
function errorClass(status: number): typeof APIError {
  switch (status) {
    case 400:
    case 413:
    case 422:
      return ValidationError;
    case 401:
      return AuthenticationError;
    case 403:
      return PermissionDeniedError;
    case 404:
      return NotFoundError;
    case 409:
      return ConflictError;
    case 410:
      return SessionClosedError;
    case 429:
      return RateLimitError;
  }
  return status >= 500 ? ServerError : APIError;
}

/** makeAPIError returns the APIError subclass of init.status. */
export function makeAPIError(init: APIErrorInit): APIError {
  return new (errorClass(init.status))(init);
}

/** The HTTP status of each error code, as the server's api.HTTPStatus gives it (for errors sent mid-stream, which carry no status). */
const codeStatus: Record<ErrorCode, number> = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  withheld: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  session_closed: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unsuitable_image: 422,
  too_many_requests: 429,
  internal: 500,
  not_configured: 501,
  unavailable: 503,
};

/** statusOfCode is the HTTP status of an error code; 500 for a code this SDK does not know. */
export function statusOfCode(code: string): number {
  return (codeStatus as Record<string, number>)[code] ?? 500;
}

/** Bounds of what is read of an error body and kept of one that is not JSON. */
const maxClipped = 512;

/** readError turns a non-2xx response into an APIError, reading its body. */
export async function readError(resp: Response, request: string): Promise<APIError> {
  const text = await resp.text().catch(() => '');
  const retryAfterMs = parseRetryAfter(resp.headers.get('Retry-After'));
  try {
    const body = JSON.parse(text) as ErrorBody;
    if (body && body.error && body.error.code) {
      const e = body.error;
      return makeAPIError({ status: resp.status, code: e.code, message: e.message, field: e.field, rule: e.rule, retryAfterMs, request });
    }
  } catch {
    // not the API's JSON: a proxy's page, say; its start is the message
  }
  let message = text.trim();
  if (message.length > maxClipped) message = message.slice(0, maxClipped) + '…';
  return makeAPIError({ status: resp.status, code: '', message: message || resp.statusText || `HTTP ${resp.status}`, retryAfterMs, request });
}

/** parseRetryAfter parses a Retry-After value, seconds or an HTTP date, into milliseconds; undefined when absent or invalid. */
export function parseRetryAfter(v: string | null): number | undefined {
  if (!v) return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
  const t = Date.parse(v);
  if (Number.isNaN(t)) return undefined;
  return Math.max(0, t - Date.now());
}
