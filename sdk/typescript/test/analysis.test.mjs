// An analysis against the real server and the harness's scripted model
// (llmtest.OpenAI with FromPrompt: the program comes from the question's
// [[code]] block, the answer from its [[answer]] block; no model runs).
import assert from 'node:assert/strict';
import { client, isPNG, serverTest } from './lib/server.mjs';

serverTest('analysis: upload a CSV, ask, get the answer, table rows and the chart as PNG', async () => {
  const c = client();
  const analysis = c.analyze([{ name: 'sales.csv', content: 'month,units\n1,10\n2,30\n3,20\n' }]);
  try {
    const question =
      'Plot units by month and show the table. ' +
      "[[code]]import matplotlib.pyplot as plt\nplt.plot(df['month'], df['units'])\nplt.title('Units by month')\nplt.xlabel('month')\nplt.show()\nshow_table(df, 'sales')\nprint(int(df['units'].sum()))[[/code]] " +
      '[[answer]]60 units were sold.[[/answer]]';
    const kinds = new Set();
    const answer = await analysis.ask(question, { onEvent: (ev) => kinds.add(ev.type) });
    assert.equal(answer.status, 'answered', answer.reason);
    assert.equal(answer.text, '60 units were sold.');
    assert.equal(answer.output, '60\n');
    assert.equal(answer.n, 1);
    for (const k of ['agent_run', 'step', 'code', 'execution', 'answer', 'result']) assert.ok(kinds.has(k), `event ${k}`);

    assert.equal(answer.tables.length, 1);
    const table = answer.tables[0];
    assert.equal(table.name, 'sales');
    assert.deepEqual(table.columns, ['month', 'units']);
    assert.deepEqual(table.rows, [[1, 10], [2, 30], [3, 20]]);
    assert.equal(table.totalRows, 3);

    assert.equal(answer.charts.length, 1);
    const chart = answer.charts[0];
    assert.equal(chart.title, 'Units by month');
    assert.equal(chart.axes[0].xlabel, 'month');
    const png = await chart.bytes();
    assert.ok(isPNG(png), 'the chart is a PNG');
    assert.equal(png.length, chart.size);

    const info = await analysis.info();
    assert.deepEqual(info.datasets, ['sales.csv']);
    assert.match(info.profile_text ?? '', /3 rows x 2 columns/);
  } finally {
    await analysis.close();
  }
});

serverTest('analysis: a question with approve: true waits for the decision given in onEvent', async () => {
  const c = client();
  const analysis = c.analyze([{ name: 'n.csv', content: 'n\n4\n5\n' }]);
  try {
    const approvals = [];
    const answer = await analysis.ask('Sum n. [[code]]print(int(df["n"].sum()))[[/code]] [[answer]]9[[/answer]]', {
      approve: true,
      onEvent: async (ev, q) => {
        if (ev.type !== 'approval') return;
        approvals.push(ev.approval.code);
        assert.equal(q.n, 1);
        const d = await q.approve(ev.approval.id, 'fine');
        assert.equal(d.approved, true);
      },
    });
    assert.deepEqual(approvals, ['print(int(df["n"].sum()))']);
    assert.equal(answer.status, 'answered');
    assert.equal(answer.output, '9\n');

    const denied = await analysis.ask('Again. [[code]]print(1)[[/code]] [[answer]]1[[/answer]]', {
      approve: true,
      onEvent: (ev, q) => (ev.type === 'approval' ? q.deny(ev.approval.id, 'no').then(() => {}) : undefined),
    });
    assert.equal(denied.n, 2);
    assert.equal(denied.status, 'denied');
  } finally {
    await analysis.close();
  }
});
