// Rich results through E2B's SDK against Crucible, as E2B's Jupyter-based
// code interpreter gives them: a pandas DataFrame as the cell's main
// result (text and HTML), a matplotlib figure left open at the end of a
// cell (a PNG, as Jupyter's inline backend shows every open figure), and
// one also saved with plt.savefig, as the seed's DataAnalysisAgent tells
// its model to do (still a PNG result on E2B).
import { Sandbox } from '@e2b/code-interpreter'
import { execSummary, main } from './lib.mjs'

main(async () => {
  const sandbox = await Sandbox.create({ timeoutMs: 60_000 })
  try {
    const frame = await sandbox.runCode("import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})")
    const open = await sandbox.runCode("import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nprint('drawn')")
    const saved = await sandbox.runCode("import matplotlib.pyplot as plt\nplt.bar(['a', 'b'], [3, 5])\nplt.savefig('/tmp/chart.png')\nprint('saved')")
    const file = await sandbox.runCode("import os\nos.path.getsize('/tmp/chart.png')")
    return {
      frame: execSummary(frame),
      open: execSummary(open),
      saved: execSummary(saved),
      savedFileBytes: Number(file.text),
      html: frame.results.find((r) => r.isMainResult)?.html ?? null,
    }
  } finally {
    await sandbox.kill()
  }
})
