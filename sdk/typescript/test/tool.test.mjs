// The tool for models (issue 28 item 3) in the whole loop of the real npm
// `openai` package: new OpenAI({baseURL}) is pointed at a local HTTP server
// this test starts, which speaks the chat-completions wire format from a
// script (no model runs here): it answers with tool calls, then with text
// once the tool messages came back. The tool runs the calls' code in a
// Crucible session of the real server, and the test checks that what the
// fake model received holds Crucible's output and the chart.
import assert from 'node:assert/strict';
import http from 'node:http';
import OpenAI from 'openai';
import { isPNG, client, serverTest } from './lib/server.mjs';

/** startFakeModel serves POST /v1/chat/completions, answering the n-th request with answers[n] and recording the bodies. */
async function startFakeModel(answers) {
  const received = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
        res.writeHead(404).end();
        return;
      }
      const parsed = JSON.parse(body);
      received.push(parsed);
      const message = answers[Math.min(received.length, answers.length) - 1];
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify({
          id: `chatcmpl-${received.length}`,
          object: 'chat.completion',
          created: 1,
          model: parsed.model,
          choices: [{ index: 0, finish_reason: message.tool_calls ? 'tool_calls' : 'stop', message: { role: 'assistant', content: null, ...message } }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      );
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { received, url: `http://127.0.0.1:${server.address().port}/v1`, close: () => new Promise((r) => server.close(r)) };
}

const call = (id, code) => ({ id, type: 'function', function: { name: 'run_python', arguments: JSON.stringify({ code }) } });

serverTest('asOpenAITool: the whole loop with the openai package, variables persisting between calls, charts as images', async (t) => {
  const model = await startFakeModel([
    { tool_calls: [call('call_1', 'x = 6 * 7\nprint("x is", x)')] },
    { tool_calls: [call('call_2', 'import matplotlib.pyplot as plt\nplt.plot([1, x])\nplt.show()\nx + 1')] },
    { content: 'x is 42, and the chart shows it.' },
  ]);
  t.after(model.close);
  const openai = new OpenAI({ baseURL: model.url, apiKey: 'not-used' });
  const tool = client().asOpenAITool();
  t.after(() => tool.close());

  const messages = [{ role: 'user', content: 'Compute x = 6*7 and plot it.' }];
  let reply;
  for (let turn = 0; turn < 5; turn++) {
    const completion = await openai.chat.completions.create({ model: 'scripted', messages, tools: [tool.definition] });
    reply = completion.choices[0].message;
    messages.push(reply);
    if (!reply.tool_calls?.length) break;
    for (const tc of reply.tool_calls) messages.push(...(await tool.call(tc.function.arguments)).messages(tc.id));
  }
  assert.equal(reply.content, 'x is 42, and the chart shows it.');
  assert.equal(model.received.length, 3);

  // The definition the model got: a function with a string code parameter.
  const sent = model.received[0].tools;
  assert.equal(sent.length, 1);
  assert.equal(sent[0].type, 'function');
  assert.equal(sent[0].function.name, 'run_python');
  assert.deepEqual(sent[0].function.parameters.required, ['code']);
  assert.equal(sent[0].function.parameters.properties.code.type, 'string');

  // What came back after the first call: Crucible's stdout in the tool message.
  const second = model.received[1].messages;
  const toolMsg1 = second.find((m) => m.role === 'tool' && m.tool_call_id === 'call_1');
  assert.equal(toolMsg1.content, 'x is 42');

  // After the second: x persisted (its value 43), and the chart as a PNG data URL in a user message.
  const third = model.received[2].messages;
  const toolMsg2 = third.find((m) => m.role === 'tool' && m.tool_call_id === 'call_2');
  assert.match(toolMsg2.content, /^value: 43\n\(1 chart attached as image\)$/);
  const images = third.filter((m) => m.role === 'user' && Array.isArray(m.content)).flatMap((m) => m.content.filter((p) => p.type === 'image_url'));
  assert.equal(images.length, 1);
  const url = images[0].image_url.url;
  assert.match(url, /^data:image\/png;base64,/);
  assert.ok(isPNG(Buffer.from(url.slice('data:image/png;base64,'.length), 'base64')));
});

serverTest('asOpenAITool: errors come back with the hint, bad arguments as text for the model', async (t) => {
  const tool = client().asOpenAITool({ name: 'python' });
  t.after(() => tool.close());
  assert.equal(tool.definition.function.name, 'python');
  const out = await tool.call({ code: 'import requests_oauthlib_missing' });
  assert.match(out.text, /^error: ModuleNotFoundError: No module named 'requests_oauthlib_missing' \(line 1\)\nhint: .*not installed/);
  assert.equal(out.result.status, 'error');
  const bad = await tool.call('{"cod": 1}');
  assert.equal(bad.text, 'error: the arguments must be a JSON object with a string field "code".');
  assert.equal(bad.result, undefined);
  assert.deepEqual(bad.messages('c1'), [{ role: 'tool', tool_call_id: 'c1', content: bad.text }]);
});
