package llm

import (
	"strings"
	"testing"
)

// md writes the test replies readably as raw strings: § stands for a
// backtick.
func md(s string) string { return strings.ReplaceAll(s, "§", "`") }

func TestExtractCode(t *testing.T) {
	tests := []struct {
		name   string
		reply  string
		lang   string
		want   string
		wantOK bool
	}{
		{
			name: "gpt style",
			reply: `Here's a Python script that calculates the factorial of a number:

§§§python
def factorial(n):
    if n == 0:
        return 1
    return n * factorial(n - 1)

print(factorial(5))
§§§

This code defines a recursive function §factorial§ that calls itself until it reaches the base case. When you run it, it prints §120§.`,
			lang: "python",
			want: `def factorial(n):
    if n == 0:
        return 1
    return n * factorial(n - 1)

print(factorial(5))`,
			wantOK: true,
		},
		{
			name: "claude style, explanation and several blocks",
			reply: `I'll solve this in two steps: read the CSV, then aggregate the totals per region.

First, let's look at how to read the file:

§§§python
import csv

with open("sales.csv") as f:
    rows = list(csv.DictReader(f))
§§§

This gives us a list of dictionaries, one per row. Now we can put everything together:

§§§python
import csv
from collections import defaultdict

totals = defaultdict(float)
with open("sales.csv") as f:
    for row in csv.DictReader(f):
        totals[row["region"]] += float(row["amount"])

for region, total in sorted(totals.items()):
    print(f"{region}: {total:.2f}")
§§§

A few notes:
- §defaultdict(float)§ starts every region at 0.0.
- The output is sorted by region name.`,
			lang: "python",
			want: `import csv
from collections import defaultdict

totals = defaultdict(float)
with open("sales.csv") as f:
    for row in csv.DictReader(f):
        totals[row["region"]] += float(row["amount"])

for region, total in sorted(totals.items()):
    print(f"{region}: {total:.2f}")`,
			wantOK: true,
		},
		{
			name: "sketch then full version: last wins",
			reply: `Here's a quick sketch of the idea:

§§§python
def solve(nums):
    ...  # TODO
§§§

Here is the full version:

§§§python
def solve(nums):
    return max(nums) - min(nums)

print(solve([3, 9, 4]))
§§§`,
			lang:   "python",
			want:   "def solve(nums):\n    return max(nums) - min(nums)\n\nprint(solve([3, 9, 4]))",
			wantOK: true,
		},
		{
			name: "code llama [PYTHON] with [TESTS]",
			reply: `[PYTHON]
def add(a, b):
    return a + b
[/PYTHON]
[TESTS]
# Test case 1:
assert add(1, 2) == 3
[/TESTS]`,
			lang:   "python",
			want:   "def add(a, b):\n    return a + b",
			wantOK: true,
		},
		{
			name:   "mistral style [PYTHON] inline",
			reply:  " [PYTHON]print(sum(range(101)))[/PYTHON]",
			lang:   "python",
			want:   "print(sum(range(101)))",
			wantOK: true,
		},
		{
			name: "deepseek style py fence",
			reply: `To reverse a string in Python, use slicing:

§§§py
s = "hello"
print(s[::-1])
§§§

Output: §olleh§`,
			lang:   "python",
			want:   "s = \"hello\"\nprint(s[::-1])",
			wantOK: true,
		},
		{
			name: "deepseek-r1 reasoning before the answer",
			reply: `<think>
The user wants the sum of squares. A first try:
§§§python
print(sum(i*i for i in range(10)))
§§§
Wait, they said 1 to 10 inclusive.
</think>

§§§python
print(sum(i * i for i in range(1, 11)))
§§§`,
			lang:   "python",
			want:   "print(sum(i * i for i in range(1, 11)))",
			wantOK: true,
		},
		{
			name:   "qwen3 reasoning without its opening tag, then bare code",
			reply:  "Okay, the user wants the date. I can use datetime.\n</think>\n\nimport datetime\nprint(datetime.date.today())",
			lang:   "python",
			want:   "import datetime\nprint(datetime.date.today())",
			wantOK: true,
		},
		{
			name: "qwen plain: only code",
			reply: `import math

def area(r):
    return math.pi * r ** 2

print(area(2))
`,
			lang:   "python",
			want:   "import math\n\ndef area(r):\n    return math.pi * r ** 2\n\nprint(area(2))",
			wantOK: true,
		},
		{
			name: "only code with a module docstring",
			reply: `"""
Count the words of a file.
"""
import sys
print(len(open(sys.argv[1]).read().split()))`,
			lang:   "python",
			want:   "\"\"\"\nCount the words of a file.\n\"\"\"\nimport sys\nprint(len(open(sys.argv[1]).read().split()))",
			wantOK: true,
		},
		{
			name:   "only code starting with a comment",
			reply:  "# compute the mean\nxs = [1, 2, 3]\nprint(sum(xs) / len(xs))",
			lang:   "python",
			want:   "# compute the mean\nxs = [1, 2, 3]\nprint(sum(xs) / len(xs))",
			wantOK: true,
		},
		{
			name:   "only code followed by prose",
			reply:  "import os\nprint(os.getcwd())\n\nThis prints the current working directory.",
			lang:   "python",
			wantOK: false,
		},
		{
			name: "bash install step then python",
			reply: `You'll need the requests library first:

§§§bash
pip install requests
§§§

Then run this script:

§§§python
import requests

r = requests.get("https://api.github.com")
print(r.status_code)
§§§`,
			lang:   "python",
			want:   "import requests\n\nr = requests.get(\"https://api.github.com\")\nprint(r.status_code)",
			wantOK: true,
		},
		{
			name: "python then a bash run step",
			reply: `§§§python
print("hi")
§§§

Save it as §hi.py§ and run:

§§§bash
python hi.py
§§§`,
			lang:   "python",
			want:   `print("hi")`,
			wantOK: true,
		},
		{
			name: "four-backtick fence holding a three-backtick string",
			reply: `This prints a Markdown snippet:

§§§§python
snippet = """
§§§python
print(1)
§§§
"""
print(snippet)
§§§§`,
			lang:   "python",
			want:   "snippet = \"\"\"\n§§§python\nprint(1)\n§§§\n\"\"\"\nprint(snippet)",
			wantOK: true,
		},
		{
			name:   "closing fence longer than the opening",
			reply:  "§§§python\nprint(1)\n§§§§§",
			lang:   "python",
			want:   "print(1)",
			wantOK: true,
		},
		{
			name:   "tilde fence",
			reply:  "~~~python\nprint('tilde')\n~~~",
			lang:   "python",
			want:   "print('tilde')",
			wantOK: true,
		},
		{
			name:   "backticks do not close a tilde fence",
			reply:  "~~~python\nprint(1)\n§§§\nprint(2)\n~~~",
			lang:   "python",
			want:   "print(1)\n§§§\nprint(2)",
			wantOK: true,
		},
		{
			name: "unterminated fence: max tokens",
			reply: `Here is the script:

§§§python
import os

for root, dirs, files in os.walk("."):
    for name in files:
        print(os.path.join(root, na`,
			lang:   "python",
			want:   "import os\n\nfor root, dirs, files in os.walk(\".\"):\n    for name in files:\n        print(os.path.join(root, na",
			wantOK: true,
		},
		{
			name:   "unterminated empty fence",
			reply:  "Sure, here's the code:\n\n§§§python\n",
			lang:   "python",
			wantOK: false,
		},
		{
			name:   "empty fenced block",
			reply:  "§§§python\n§§§",
			lang:   "python",
			wantOK: false,
		},
		{
			name:   "crlf line endings",
			reply:  "Here you go:\r\n\r\n```python\r\nfor i in range(3):\r\n    print(i)\r\n```\r\n",
			lang:   "python",
			want:   "for i in range(3):\n    print(i)",
			wantOK: true,
		},
		{
			name:   "bom and trailing whitespace",
			reply:  "\ufeff```python  \nx = 1   \nprint(x)\t\n\n\n```  \n",
			lang:   "python",
			want:   "x = 1\nprint(x)",
			wantOK: true,
		},
		{
			name: "fences inside a numbered list",
			reply: `Follow these steps:

1. Install the dependency:
   §§§bash
   pip install numpy
   §§§
2. Run the computation:
   §§§python
   import numpy as np

   a = np.arange(6).reshape(2, 3)
   print(a.sum(axis=0))
   §§§
3. Check the output.`,
			lang:   "python",
			want:   "import numpy as np\n\na = np.arange(6).reshape(2, 3)\nprint(a.sum(axis=0))",
			wantOK: true,
		},
		{
			name: "fence indented four spaces under a list item",
			reply: `- Step one, the code:

    §§§python
    def greet(name):
        return f"Hello, {name}!"

    print(greet("world"))
    §§§

- Step two: run it.`,
			lang:   "python",
			want:   "def greet(name):\n    return f\"Hello, {name}!\"\n\nprint(greet(\"world\"))",
			wantOK: true,
		},
		{
			name: "html pre code",
			reply: `<p>Here is the code:</p>
<pre><code class="language-python">import json
print(json.dumps({"a": 1}))
</code></pre>
<p>It prints a JSON object.</p>`,
			lang:   "python",
			want:   "import json\nprint(json.dumps({\"a\": 1}))",
			wantOK: true,
		},
		{
			name:   "code tag",
			reply:  "<code>\nprint('tagged')\n</code>",
			lang:   "python",
			want:   "print('tagged')",
			wantOK: true,
		},
		{
			name:   "python tag",
			reply:  "I'll compute it.\n<python>\nimport math\nprint(math.factorial(10))\n</python>",
			lang:   "python",
			want:   "import math\nprint(math.factorial(10))",
			wantOK: true,
		},
		{
			name:   "codeact execute tag",
			reply:  "Let me check the files first.\n<execute>\nimport os\nprint(os.listdir('.'))\n</execute>",
			lang:   "python",
			want:   "import os\nprint(os.listdir('.'))",
			wantOK: true,
		},
		{
			name:   "execute_python tag, unterminated",
			reply:  "<execute_python>\nprint('cut",
			lang:   "python",
			want:   "print('cut",
			wantOK: true,
		},
		{
			name:   "tag wrapping a fence",
			reply:  "<execute>\n§§§python\nprint(2)\n§§§\n</execute>",
			lang:   "python",
			want:   "print(2)",
			wantOK: true,
		},
		{
			name:   "inline code tag in prose is not code",
			reply:  "To print a value in Python, call <code>print(value)</code> with the value.",
			lang:   "python",
			wantOK: false,
		},
		{
			name:   "prose only",
			reply:  "I'm sorry, but I can't help with that. Could you clarify what the script should do?",
			lang:   "python",
			wantOK: false,
		},
		{
			name:   "prose mentioning code inline",
			reply:  "You can use §sorted(xs)§ to sort the list. For example, sorted([3, 1, 2]) returns [1, 2, 3].",
			lang:   "python",
			wantOK: false,
		},
		{
			name:   "final answer prose",
			reply:  "The answer is 42.",
			lang:   "python",
			wantOK: false,
		},
		{
			name:   "empty reply",
			reply:  "",
			lang:   "python",
			wantOK: false,
		},
		{
			name:   "whitespace reply",
			reply:  " \n\t\n",
			lang:   "python",
			wantOK: false,
		},
		{
			name:   "json mimicking a tool call",
			reply:  `{"name": "run_python", "arguments": {"code": "import sys\nprint(sys.version)"}}`,
			lang:   "python",
			want:   "import sys\nprint(sys.version)",
			wantOK: true,
		},
		{
			name:   "json with arguments as a string",
			reply:  `{"tool": "python", "arguments": "{\"code\": \"print(1 + 1)\"}"}`,
			lang:   "python",
			want:   "print(1 + 1)",
			wantOK: true,
		},
		{
			name:   "json without code",
			reply:  `{"answer": 42, "explanation": "six times seven"}`,
			lang:   "python",
			wantOK: false,
		},
		{
			name: "output block skipped",
			reply: `§§§python
print(sum(range(10)))
§§§

§§§output
45
§§§`,
			lang:   "python",
			want:   "print(sum(range(10)))",
			wantOK: true,
		},
		{
			name: "untagged code then untagged output is last: tagged wins",
			reply: `§§§python
print(2 ** 10)
§§§
Output:
§§§
1024
§§§`,
			lang:   "python",
			want:   "print(2 ** 10)",
			wantOK: true,
		},
		{
			name: "untagged blocks count when none is tagged",
			reply: `First install the dependency:
§§§
pip install requests
§§§
Then run:
§§§
import requests
print(requests.get("https://example.com").status_code)
§§§`,
			lang:   "python",
			want:   "import requests\nprint(requests.get(\"https://example.com\").status_code)",
			wantOK: true,
		},
		{
			name: "untagged run command after the code is skipped",
			reply: `§§§
print("hello")
§§§
Run it with:
§§§
python hello.py
§§§`,
			lang:   "python",
			want:   `print("hello")`,
			wantOK: true,
		},
		{
			name: "untagged code then untagged output",
			reply: `§§§
words = "the cat the hat".split()
print(len(set(words)))
§§§
Output:
§§§
3
§§§`,
			lang:   "python",
			want:   "words = \"the cat the hat\".split()\nprint(len(set(words)))",
			wantOK: true,
		},
		{
			name:   "prose without final punctuation",
			reply:  "Sure, I can help with that (see below)",
			lang:   "python",
			wantOK: false,
		},
		{
			name:   "bare call with many arguments",
			reply:  "Point(a, b, c, d)",
			lang:   "python",
			want:   "Point(a, b, c, d)",
			wantOK: true,
		},
		{
			name:   "console session is not python",
			reply:  "Run it:\n§§§console\n$ python main.py\nHello\n§§§",
			lang:   "python",
			wantOK: false,
		},
		{
			name:   "untagged shell session is not python",
			reply:  "§§§\n$ pip install pandas\nSuccessfully installed pandas-2.2.2\n§§§",
			lang:   "python",
			wantOK: false,
		},
		{
			name: "python repl transcript",
			reply: `In the interpreter:

§§§python
>>> import math
>>> math.sqrt(16)
4.0
>>> for i in range(2):
...     print(i)
...
0
1
§§§`,
			lang:   "python",
			want:   "import math\nmath.sqrt(16)\nfor i in range(2):\n    print(i)",
			wantOK: true,
		},
		{
			name:   "pycon block",
			reply:  "§§§pycon\n>>> 'a,b'.split(',')\n['a', 'b']\n§§§",
			lang:   "python",
			want:   "'a,b'.split(',')",
			wantOK: true,
		},
		{
			name:   "bare repl transcript",
			reply:  ">>> x = [3, 1, 2]\n>>> sorted(x)\n[1, 2, 3]",
			lang:   "python",
			want:   "x = [3, 1, 2]\nsorted(x)",
			wantOK: true,
		},
		{name: "info {python}", reply: "§§§{python}\nprint(1)\n§§§", lang: "python", want: "print(1)", wantOK: true},
		{name: "info {.python}", reply: "§§§{.python}\nprint(1)\n§§§", lang: "python", want: "print(1)", wantOK: true},
		{name: "info with title", reply: "§§§python title=\"x.py\"\nprint(1)\n§§§", lang: "python", want: "print(1)", wantOK: true},
		{name: "info Python", reply: "§§§Python\nprint(1)\n§§§", lang: "python", want: "print(1)", wantOK: true},
		{name: "info python3", reply: "§§§python3\nprint(1)\n§§§", lang: "python", want: "print(1)", wantOK: true},
		{name: "info path", reply: "§§§python:src/main.py\nprint(1)\n§§§", lang: "python", want: "print(1)", wantOK: true},
		{name: "info file name", reply: "§§§main.py\nprint(1)\n§§§", lang: "python", want: "print(1)", wantOK: true},
		{name: "lang alias py", reply: "§§§python\nprint(1)\n§§§", lang: "py", want: "print(1)", wantOK: true},
		{
			name:   "tagged block beats a later untagged one",
			reply:  "§§§python\nx = 1\n§§§\nor, shorter:\n§§§\ny = 2\n§§§",
			lang:   "python",
			want:   "x = 1",
			wantOK: true,
		},
		{
			name:   "only another language",
			reply:  "§§§bash\nls -la\n§§§",
			lang:   "python",
			wantOK: false,
		},
		{
			name: "javascript",
			reply: `Here's how to read a file in Node.js:

§§§javascript
const fs = require("fs");

const text = fs.readFileSync("input.txt", "utf8");
console.log(text.split("\n").length);
§§§`,
			lang:   "javascript",
			want:   "const fs = require(\"fs\");\n\nconst text = fs.readFileSync(\"input.txt\", \"utf8\");\nconsole.log(text.split(\"\\n\").length);",
			wantOK: true,
		},
		{
			name:   "npm install then js",
			reply:  "§§§bash\nnpm install lodash\n§§§\n\n§§§js\nconst _ = require('lodash');\nconsole.log(_.chunk([1, 2, 3, 4], 2));\n§§§",
			lang:   "js",
			want:   "const _ = require('lodash');\nconsole.log(_.chunk([1, 2, 3, 4], 2));",
			wantOK: true,
		},
		{name: "node fence", reply: "§§§node\nconsole.log(1)\n§§§", lang: "javascript", want: "console.log(1)", wantOK: true},
		{
			name:   "bare javascript",
			reply:  "const xs = [1, 2, 3];\nconsole.log(xs.map((n) => n * 2));",
			lang:   "javascript",
			want:   "const xs = [1, 2, 3];\nconsole.log(xs.map((n) => n * 2));",
			wantOK: true,
		},
		{
			name:   "python block when javascript is wanted",
			reply:  "§§§python\nprint(1)\n§§§",
			lang:   "javascript",
			wantOK: false,
		},
		{
			name: "bash script",
			reply: `This counts the lines of every text file:

§§§bash
#!/bin/bash
for f in *.txt; do
  wc -l "$f"
done
§§§`,
			lang:   "bash",
			want:   "#!/bin/bash\nfor f in *.txt; do\n  wc -l \"$f\"\ndone",
			wantOK: true,
		},
		{name: "sh fence", reply: "§§§sh\necho hi\n§§§", lang: "bash", want: "echo hi", wantOK: true},
		{
			name:   "console session for bash",
			reply:  "§§§console\n$ ls -la\ntotal 8\n$ docker run --rm \\\n    alpine echo hi\nhi\n§§§",
			lang:   "bash",
			want:   "ls -la\ndocker run --rm \\\n    alpine echo hi",
			wantOK: true,
		},
		{
			name:   "untagged shell block for bash",
			reply:  "Install it with:\n§§§\npip install requests\n§§§",
			lang:   "sh",
			want:   "pip install requests",
			wantOK: true,
		},
		{name: "execute_bash tag", reply: "<execute_bash>\nls /tmp\n</execute_bash>", lang: "bash", want: "ls /tmp", wantOK: true},
		{name: "bare bash", reply: "#!/bin/sh\necho hello", lang: "bash", want: "#!/bin/sh\necho hello", wantOK: true},
		{
			name:   "any language: last block",
			reply:  "§§§bash\nls\n§§§\n§§§python\nprint(1)\n§§§",
			lang:   "",
			want:   "print(1)",
			wantOK: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ExtractCode(md(tt.reply), tt.lang)
			if ok != tt.wantOK || got != md(tt.want) {
				t.Errorf("ExtractCode(%q, %q) = %q, %v; want %q, %v", md(tt.reply), tt.lang, got, ok, md(tt.want), tt.wantOK)
			}
		})
	}
}

func TestExtractBlockClosed(t *testing.T) {
	b, ok := ExtractBlock("Here:\n```python\nprint(1)\n```\nMore:\n```python\nprint(2", "python")
	if !ok || b.Code != "print(2" || b.Closed || b.Lang != "python" {
		t.Errorf("unterminated: got %+v, %v", b, ok)
	}
	b, ok = ExtractBlock("```python\nprint(1)\n```", "python")
	if !ok || !b.Closed {
		t.Errorf("terminated: got %+v, %v", b, ok)
	}
	b, ok = ExtractBlock("print(1)", "python")
	if !ok || !b.Closed || b.Lang != "python" || b.Code != "print(1)" {
		t.Errorf("bare: got %+v, %v", b, ok)
	}
}

func TestExtractCodeBlocks(t *testing.T) {
	reply := md(`<think>
§§§python
draft()
§§§
</think>
Install:
§§§shell
$ pip install x
§§§
Code:
§§§{.python}
>>> 1 + 1
2
§§§
§§§output
2
§§§
§§§
untagged
§§§
[PYTHON]
print(3)
[/PYTHON]
§§§js
console.log(`)
	want := []CodeBlock{
		{Lang: "bash", Code: "$ pip install x", Closed: true},
		{Lang: "python", Code: ">>> 1 + 1\n2", Closed: true},
		{Lang: "output", Code: "2", Closed: true},
		{Lang: "", Code: "untagged", Closed: true},
		{Lang: "python", Code: "print(3)", Closed: true},
		{Lang: "javascript", Code: "console.log(", Closed: false},
	}
	got := CodeBlocks(reply)
	if len(got) != len(want) {
		t.Fatalf("CodeBlocks = %+v; want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("block %d = %+v; want %+v", i, got[i], want[i])
		}
	}
}
