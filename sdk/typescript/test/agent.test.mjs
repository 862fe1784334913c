// Agent runs with approvals against the real server and the harness's
// scripted model (its program and answer come from the task's [[code]]
// and [[answer]] blocks; no model runs here).
import assert from 'node:assert/strict';
import { ConflictError, NotFoundError } from '../dist/index.js';
import { client, env, serverTest } from './lib/server.mjs';

const task = 'Compute 6*7. [[code]]print(6*7)[[/code]] [[answer]]42[[/answer]]';

serverTest('agentRun: the approval is surfaced, approved, and the run ends with the answer', async () => {
  const c = client();
  const run = await c.agentRun(task, { approve: true });
  assert.match(run.id, /^agt_/);
  const approvals = [];
  const kinds = [];
  let stdout = '';
  for await (const ev of run.events()) {
    kinds.push(ev.type);
    if (ev.type === 'stdout') stdout += ev.text;
    if (ev.type === 'approval') {
      approvals.push(ev.approval);
      assert.equal(ev.approval.code, 'print(6*7)');
      assert.equal((await run.get()).status, 'awaiting_approval');
      const d = await run.approve(ev.approval.id, 'looks safe');
      assert.equal(d.approved, true);
      assert.equal(d.by, 'api');
      await assert.rejects(run.approve(ev.approval.id), (err) => err instanceof ConflictError && err.status === 409);
    }
  }
  assert.equal(approvals.length, 1);
  assert.ok(kinds.indexOf('approval') < kinds.indexOf('approval_decision'));
  assert.ok(kinds.indexOf('approval_decision') < kinds.indexOf('code'));
  assert.equal(stdout, '42\n');
  assert.equal(kinds.at(-1), 'result');
  const done = await run.wait();
  assert.equal(done.status, 'answered');
  assert.equal(done.answer, '42');
  // Its execution is a run record.
  const { runs } = await c.listRuns({ agentRun: run.id });
  assert.equal(runs.length, 1);
  assert.equal(runs[0].stdout, '42\n');
});

serverTest('agentRun: a denied approval ends the run denied, nothing runs', async () => {
  const c = client();
  const run = await c.agentRun(task, { approve: true });
  let denied = false;
  for await (const ev of run.events()) {
    if (ev.type === 'approval') {
      const d = await run.deny(ev.approval.id, 'not today');
      assert.equal(d.approved, false);
      assert.equal(d.reason, 'not today');
      denied = true;
    }
    assert.notEqual(ev.type, 'code', 'no program ran');
  }
  assert.ok(denied);
  const done = await run.wait();
  assert.equal(done.status, 'denied');
  assert.equal((await c.listRuns({ agentRun: run.id })).runs.length, 0);
});

serverTest('agentRun without approvals: wait() follows it to its end; getAgentRun attaches to it', async () => {
  const c = client();
  const run = await c.agentRun(task);
  const done = await run.wait();
  assert.equal(done.status, 'answered');
  assert.equal(done.answer, '42');
  assert.ok(done.trace, 'the ended run carries its trace');
  const again = await c.getAgentRun(run.id);
  assert.equal(again.info.status, 'answered');
  assert.equal((await again.wait()).answer, '42', 'an ended run is replayed to its result');
  await assert.rejects(client({ apiKey: env.otherKey }).getAgentRun(run.id), NotFoundError);
});
