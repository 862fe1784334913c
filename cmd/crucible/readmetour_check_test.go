package main

import (
	"reflect"
	"testing"
)

// TestParseTour checks how the README's blocks become the tour's
// commands and files.
func TestParseTour(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []tourItem
		err       bool
	}{
		{name: "commands and their output",
			doc: "text\n```console\n$ echo a\na\n\n$ echo b \\\n  c\nb c\n\n```\n",
			want: []tourItem{{line: 3, command: "echo a", want: []string{"a"}},
				{line: 6, command: "echo b \\\n  c", want: []string{"b c"}}}},
		{name: "a background command",
			doc:  "```console\n$ bin/crucible serve &\nweb UI: http://127.0.0.1:8080/\n```\n",
			want: []tourItem{{line: 2, command: "bin/crucible serve", background: true, want: []string{"web UI: http://127.0.0.1:8080/"}}}},
		{name: "a file, and blocks that are not run",
			doc:  "```json file=serve.json\n{\"model\": {}}\n```\n```sh\n$ not run\n```\n```\n$ nor this\n```\n",
			want: []tourItem{{line: 1, file: "serve.json", content: "{\"model\": {}}\n"}}},
		{name: "output before any prompt", doc: "```console\noops\n$ echo\n```\n", err: true},
		{name: "an unclosed fence", doc: "```console\n$ echo\n", err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseTour(tc.doc)
			if (err != nil) != tc.err {
				t.Fatalf("err %v, want an error: %v", err, tc.err)
			}
			if !tc.err && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestCompareTour checks that only durations, peak memory and IDs may
// differ between the shown and the real output: anything else is drift.
func TestCompareTour(t *testing.T) {
	shown := []string{"45", "crucible: ok (exit 0) · wall 28 ms · cpu 24 ms · peak 3.996MiB",
		"attempts 1/4 (0 failed) · tokens 45 · execution 5 ms · trace agt_67180b14ec37e686",
		"http://127.0.0.1:8080/#/analyses/ana_311ba4cfa9b21eff", "run 0123456789abcdef0123456789abcdef", ""}
	for _, tc := range []struct {
		name  string
		real  []string
		agree bool
	}{
		{"the same", shown, true},
		{"other times, memory and ids", []string{"45", "crucible: ok (exit 0) · wall 1177 ms · cpu 3 ms · peak 67.73MiB",
			"attempts 1/4 (0 failed) · tokens 45 · execution 12 ms · trace agt_b43fac1d0647fae1",
			"http://127.0.0.1:8080/#/analyses/ana_5772e0864a9af633", "run fedcba9876543210fedcba9876543210"}, true},
		{"another value", []string{"46", shown[1], shown[2], shown[3], shown[4]}, false},
		{"another status", []string{"45", "crucible: error (exit 1) · wall 28 ms · cpu 24 ms · peak 3.996MiB", shown[2], shown[3], shown[4]}, false},
		{"another token count", []string{"45", shown[1], "attempts 1/4 (0 failed) · tokens 46 · execution 5 ms · trace agt_67180b14ec37e686", shown[3], shown[4]}, false},
		{"a line missing", shown[:3], false},
		{"a line more", append(append([]string{}, shown[:5]...), "extra"), false},
		{"an id of another kind", []string{"45", shown[1], shown[2], "http://127.0.0.1:8080/#/analyses/ses_5772e0864a9af633", shown[4]}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := compareTour(shown, tc.real); (diff == "") != tc.agree {
				t.Errorf("compareTour: %q, want agreement %v", diff, tc.agree)
			}
		})
	}
}

// TestRewriteTour checks that -tour.update replaces only the output of
// the commands it ran, continuation lines and other blocks kept.
func TestRewriteTour(t *testing.T) {
	doc := "intro\n```console\n$ echo a \\\n  b\nold\n\nolder\n$ serve &\nweb UI\n$ echo c\nc\n```\n```sh\n$ echo a\nkept\n```\n"
	got := rewriteTour(doc, map[int][]string{3: {"a b", "", "new"}, 10: {"c"}})
	want := "intro\n```console\n$ echo a \\\n  b\na b\n\nnew\n$ serve &\nweb UI\n$ echo c\nc\n```\n```sh\n$ echo a\nkept\n```\n"
	if got != want {
		t.Errorf("rewriteTour:\n%s\nwant:\n%s", got, want)
	}
	items, err := parseTour(got)
	if err != nil || len(items) != 3 || !reflect.DeepEqual(items[0].want, []string{"a b", "", "new"}) {
		t.Errorf("the rewritten tour parses as %+v, %v", items, err)
	}
}
