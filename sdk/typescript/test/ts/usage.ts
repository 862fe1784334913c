// A type check of the SDK as the tests use it (npm run build compiles
// it): the generated types must accept what the API accepts and refuse
// what it refuses. Each @ts-expect-error must stay an error: tsc fails
// with "Unused '@ts-expect-error' directive" when the types loosen.
import { Crucible, ValidationError, type AgentEvent, type RunEvent, type Status } from '@crucible-sandbox/sdk';

export async function usage(c: Crucible): Promise<void> {
  const res = await c.run('print(1)', { language: 'py', limits: { memory_bytes: 64 << 20, wall_time_ms: 2000 }, files: [{ name: 'a.bin', content: new Uint8Array([1]) }] });
  const status: Status | 'queued' | 'running' | 'interrupted' | 'lost' = res.status;
  const wall: number = res.metrics.wall_ms;
  const hint: string | undefined = res.error?.hint;
  void [status, wall, hint];

  // @ts-expect-error memory_mb is not a field of Limits (the API refuses unknown fields)
  await c.run('print(1)', { limits: { memory_mb: 64 } });
  // @ts-expect-error "cobol" is not a language the API knows
  await c.run('print(1)', { language: 'cobol' });

  for await (const ev of c.streamRun('print(1)')) {
    const e: RunEvent = ev;
    if (e.type === 'stdout') void e.text.length;
    if (e.type === 'result') void e.result.exitCode;
  }

  const run = await c.agentRun('task', { approve: true, max_retries: 1 });
  for await (const ev of run.events()) {
    const e: AgentEvent = ev;
    if (e.type === 'approval') await run.approve(e.approval.id);
    // @ts-expect-error an approval_decision event has no approval field
    if (e.type === 'approval_decision') void e.approval;
  }

  try {
    await c.getRun('x');
  } catch (err) {
    if (err instanceof ValidationError) void [err.status, err.code, err.field, err.rule];
  }
}
