// A ready tool for models that call tools the OpenAI way: its definition
// for the request's `tools`, and a call that runs the model's code in a
// Crucible session (variables persist from call to call) and returns what
// to send back: text, and the charts as PNG data URLs.

import { toBase64 } from './data.js';
import { defineAsyncDispose } from './dispose.js';
import type { RunResult } from './runs.js';
import type { Session } from './sessions.js';

/** The tool's entry for a chat-completions request's `tools`. */
export interface OpenAIToolDefinition {
  type: 'function';
  function: {
    name: string;
    description: string;
    parameters: {
      type: 'object';
      properties: { code: { type: 'string'; description: string } };
      required: ['code'];
      additionalProperties: false;
    };
  };
}

/** A content part of a chat message: text, or an image by URL (here a data: URL). */
export type ContentPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

/** A message to send back to the model after a tool call. */
export type ToolReplyMessage = { role: 'tool'; tool_call_id: string; content: string } | { role: 'user'; content: ContentPart[] };

/** What a call of the tool returns. */
export interface ToolOutput {
  /** What the code printed, its value, and the error with the server's hint, as text. */
  text: string;
  /** The charts the code drew, as data:image/png;base64 URLs. */
  images: string[];
  /** text and images as content parts, for APIs whose tool results may hold images. */
  content: ContentPart[];
  /** The cell's result; undefined when the arguments were refused. */
  result: RunResult | undefined;
  /**
   * messages are the messages to append to the conversation for the
   * tool call toolCallId: the tool message (text: chat completions take
   * only text in a tool message) and, when the code drew charts, a user
   * message holding them as images.
   */
  messages(toolCallId: string): ToolReplyMessage[];
}

/** Options of asOpenAITool. */
export interface ToolOptions {
  /** The function's name; "run_python" by default. */
  name?: string;
  /** The function's description for the model. */
  description?: string;
  /** The most characters of text a call returns (the middle is cut); 20000 by default. */
  maxChars?: number;
}

const defaultDescription =
  'Runs Python code in a sandboxed Jupyter-like session and returns its output. Variables, imports and files persist between calls. ' +
  'pandas, numpy and matplotlib are available; charts shown with plt.show() are returned as images. The sandbox has no network.';

/**
 * OpenAITool is a Crucible session offered to a model as a function
 * tool. It opens its session at the first call and keeps it: close it
 * (or `await using` it) when the conversation ends.
 */
export class OpenAITool {
  /** The entry for the request's `tools`. */
  readonly definition: OpenAIToolDefinition;
  private session: Promise<Session> | undefined;
  private readonly maxChars: number;

  constructor(
    private readonly open: () => Promise<Session>,
    opts: ToolOptions = {},
  ) {
    this.maxChars = opts.maxChars ?? 20_000;
    this.definition = {
      type: 'function',
      function: {
        name: opts.name ?? 'run_python',
        description: opts.description ?? defaultDescription,
        parameters: {
          type: 'object',
          properties: { code: { type: 'string', description: 'The Python code to run. The value of its last expression is returned too.' } },
          required: ['code'],
          additionalProperties: false,
        },
      },
    };
  }

  /**
   * call runs the code of a tool call: args is the call's
   * function.arguments (the JSON string the model sent) or that JSON
   * parsed. Arguments without a string `code` are answered with a text
   * saying so, for the model to correct, not thrown.
   */
  async call(args: string | { code?: unknown }): Promise<ToolOutput> {
    let code: unknown;
    try {
      code = (typeof args === 'string' ? JSON.parse(args) : args)?.code;
    } catch {
      code = undefined;
    }
    if (typeof code !== 'string') return output('error: the arguments must be a JSON object with a string field "code".', [], undefined);
    this.session ??= this.open().catch((err) => {
      this.session = undefined; // the next call tries again
      throw err;
    });
    const s = await this.session;
    const res = await s.exec(code);
    const images: string[] = [];
    for (const c of res.charts) images.push('data:image/png;base64,' + toBase64(await c.bytes()));
    for (const d of res.displays) if (d.mime === 'image/png' && d.data) images.push('data:image/png;base64,' + toBase64(d.data));
    return output(clip(describe(res, images.length), this.maxChars), images, res);
  }

  /** close closes the tool's session, if it opened one. */
  async close(): Promise<void> {
    const s = this.session;
    this.session = undefined;
    if (s) await (await s).close();
  }
}

defineAsyncDispose(OpenAITool.prototype);

/** The declaration of [Symbol.asyncDispose], which defineAsyncDispose adds where the runtime has the symbol. */
export interface OpenAITool {
  [Symbol.asyncDispose](): Promise<void>;
}

/** describe is a cell's result as text for a model. */
function describe(res: RunResult, charts: number): string {
  const parts: string[] = [];
  if (res.stdout) parts.push(res.stdout.trimEnd());
  if (res.stderr && !res.error) parts.push('stderr:\n' + res.stderr.trimEnd());
  if (res.value) parts.push('value: ' + res.value);
  if (res.error) {
    const e = res.error;
    parts.push(`error: ${e.type}: ${e.message}${e.line ? ` (line ${e.line})` : ''}`);
    if (e.hint) parts.push('hint: ' + e.hint);
  }
  if (res.status !== 'ok' && res.status !== 'error') parts.push(`status: ${res.status}${res.reason ? ': ' + res.reason : ''}`);
  if (charts > 0) parts.push(`(${charts} chart${charts > 1 ? 's' : ''} attached as image${charts > 1 ? 's' : ''})`);
  return parts.join('\n') || '(no output)';
}

/** clip keeps at most max characters of s, cutting its middle. */
function clip(s: string, max: number): string {
  if (s.length <= max) return s;
  const half = Math.floor((max - 40) / 2);
  return `${s.slice(0, half)}\n… (${s.length - 2 * half} characters cut) …\n${s.slice(-half)}`;
}

/** output assembles a ToolOutput. */
function output(text: string, images: string[], result: RunResult | undefined): ToolOutput {
  const content: ContentPart[] = [{ type: 'text', text }, ...images.map((url) => ({ type: 'image_url' as const, image_url: { url } }))];
  return {
    text,
    images,
    content,
    result,
    messages(toolCallId) {
      const msgs: ToolReplyMessage[] = [{ role: 'tool', tool_call_id: toolCallId, content: text }];
      if (images.length) msgs.push({ role: 'user', content: [{ type: 'text', text: 'The charts the code drew:' }, ...content.slice(1)] });
      return msgs;
    },
  };
}
