// The seed's DataAnalysisAgent, ported to JavaScript on E2B's official
// @e2b/code-interpreter, run against Crucible: profile the data, ask a
// question, have the model write pandas code, run it in the sandbox and,
// on an error, feed execution.error.value back to the model and retry (at
// most 3 times). The model is reached as the seed reaches OpenAI's: POST
// {OPENAI_BASE_URL}/chat/completions with model "gpt-4o" and the
// messages, with fetch rather than OpenAI's SDK (not installed here).
//
// Two changes from the seed, both marked below: the sandbox is created
// with `await Sandbox.create(...)` (the JavaScript SDK's constructor is
// asynchronous), and the schema falls back to the profile's stdout. The
// seed reads result.text, which E2B's SDKs fill from the cell's last
// expression only; its profile prints, so on E2B's cloud as on Crucible
// its schema would be empty.
import { Sandbox } from '@e2b/code-interpreter'
import { env, main } from './lib.mjs'

const baseURL = env('OPENAI_BASE_URL')
const apiKey = env('OPENAI_API_KEY')

// client.chat.completions.create of OpenAI's SDK, on the wire.
const client = {
  chat: {
    completions: {
      async create(body) {
        const res = await fetch(`${baseURL}/chat/completions`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${apiKey}` },
          body: JSON.stringify(body),
        })
        if (!res.ok) throw new Error(`chat completions: ${res.status} ${await res.text()}`)
        return res.json()
      },
    },
  },
}

// strip is Python's str.strip(chars): it removes any of chars from both
// ends (so strip("```python") removes a fence's ``` and "python").
function strip(s, chars) {
  let i = 0
  let j = s.length
  while (i < j && chars.includes(s[i])) i++
  while (j > i && chars.includes(s[j - 1])) j--
  return s.slice(i, j)
}

class DataAnalysisAgent {
  // Agent that translates natural language questions into pandas code.
  constructor(sandbox, dataPath) {
    this.sandbox = sandbox
    this.dataPath = dataPath
    this.schema = null
    this.conversation = []
  }

  // Changed: Python's Sandbox(timeout=60) in __init__ is
  // `await Sandbox.create({timeoutMs: 60_000})` in JavaScript.
  static async create(dataPath) {
    return new DataAnalysisAgent(await Sandbox.create({ timeoutMs: 60_000 }), dataPath)
  }

  // Phase 1: Profile the dataset to understand its structure.
  async profileData() {
    const profileCode = `
import pandas as pd
df = pd.read_csv('${this.dataPath}')
info = {
    'shape': df.shape,
    'columns': {col: str(dtype) for col, dtype in df.dtypes.items()},
    'sample': df.head(3).to_dict(),
    'nulls': df.isnull().sum().to_dict(),
    'stats': df.describe(include='all').to_dict()
}
import json
print(json.dumps(info, indent=2, default=str))
`
    const result = await this.sandbox.runCode(profileCode)
    // Changed: the seed's schema is result.text alone (see the top).
    this.schema = result.text ?? result.logs.stdout.join('')
    return this.schema
  }

  // Phase 2 and 3: Generate code, execute, validate, and explain.
  async ask(question, maxRetries = 3) {
    if (!this.schema) await this.profileData()
    this.conversation.push({ role: 'user', content: question })
    for (let attempt = 0; attempt < maxRetries; attempt++) {
      // Generate pandas code
      const codeResponse = await client.chat.completions.create({
        model: 'gpt-4o',
        messages: [
          {
            role: 'system',
            content:
              'You are a data analyst. Write Python pandas code to answer ' +
              'the user\'s question. The DataFrame is loaded as `df`. ' +
              'Always print results. For plots, use matplotlib and call ' +
              "plt.savefig('/tmp/chart.png'). Return ONLY the code." +
              `\n\nDataset schema:\n${this.schema}`,
          },
          ...this.conversation,
        ],
      })
      let code = codeResponse.choices[0].message.content
      code = strip(strip(code.trim(), '```python'), '```')
      // Execute in sandbox
      const fullCode = `import pandas as pd\ndf = pd.read_csv('${this.dataPath}')\n${code}`
      const execution = await this.sandbox.runCode(fullCode)
      if (!execution.error) {
        return {
          code,
          output: execution.text ?? null,
          charts: execution.results.filter((r) => r.png).map((r) => r.png),
          // Not in the seed: what the test also checks.
          stdout: execution.logs.stdout.join(''),
          attempt: attempt + 1,
        }
      }
      // Self-debug: feed error back for correction
      this.conversation.push({
        role: 'user',
        content: `The code raised an error:\n${execution.error.value}\nPlease fix it.`,
      })
    }
    return { error: 'Failed after maximum retries' }
  }
}

const salesCSV = `product,region,units,revenue
alpha,north,10,1200.0
beta,north,4,480.0
gamma,south,7,2100.0
delta,south,12,600.0
epsilon,east,3,900.0
zeta,east,9,1350.0
eta,west,5,250.0
alpha,south,6,720.0
gamma,west,2,600.0
`

main(async () => {
  // Usage, as in the seed, with the data written first (the seed's
  // run_code_in_sandbox writes it with files.write).
  const agent = await DataAnalysisAgent.create('/home/user/sales_q4.csv')
  try {
    await agent.sandbox.files.write('/home/user/sales_q4.csv', salesCSV)
    const result = await agent.ask('What are the top 5 products by revenue, and show a bar chart?')
    return { result, schema: agent.schema, conversation: agent.conversation }
  } finally {
    await agent.sandbox.kill() // not in the seed's usage: the test leaves nothing behind
  }
})
