package analyst

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// salesCSV returns 40 rows of region (North, South and East, with case
// and space variants), amount (dollars, thousands separators; row 7 is
// "call us"), rate (percentages), units (thousands separators), name
// (one per row, two differing only in case) and code (plain numbers).
func salesCSV() string {
	regions := []string{"North", "north", " NORTH ", "South", "South", "south", "East", "North"}
	var b strings.Builder
	b.WriteString("region,amount,rate,units,name,code\n")
	for i := range 40 {
		amount := fmt.Sprintf(`"$%d,%03d.50"`, 1+i%3, i)
		if i == 6 {
			amount = "call us"
		}
		name := fmt.Sprintf("person%d", i)
		if i == 1 {
			name = "PERSON0"
		}
		fmt.Fprintf(&b, "%s,%s,%d%%,\"%d,000\",%s,%d\n", regions[i%len(regions)], amount, i%10, 1+i%4, name, 100+i)
	}
	return b.String()
}

// Proves crucible_clean's numbers and case, run as cells in a real
// session of the data-science image: which columns it converts or
// unifies (and which it leaves), the summary's numbers, case and
// warnings, the cleaned file, and the options that turn each off.
func TestCrucibleCleanNumbersAndCase(t *testing.T) {
	a := openAnalysis(t, newRuntime(t), Dataset{Name: "sales.csv", Content: []byte(salesCSV())})
	ctx := context.Background()
	if err := a.loadHelpers(ctx); err != nil {
		t.Fatal(err)
	}
	show := `
print(sorted((k, v["converted"], v["failed"], v["kind"], v["unit"]) for k, v in s["numbers"].items()))
print(sorted((k, v["changed"], v["groups"], v["spellings"]) for k, v in s["case"].items()))
print([(w["row"], w["column"], w["value"], w["reason"]) for w in s["warnings"]])
print("".join(open(s["output"]).readlines()[:4]), end="")`
	for _, tc := range []struct {
		name, code, want string
	}{
		{"defaults", "s = crucible_clean('sales')" + show,
			"[('amount', 39, 1, 'currency', '$'), ('rate', 40, 0, 'percent', '%'), ('units', 40, 0, 'thousands', '')]\n" +
				"[('region', 15, 2, {'North': ['north', 'NORTH'], 'South': ['south']})]\n" +
				"[(7, 'amount', 'call us', 'not a number')]\n" +
				"region,amount,rate,units,name,code\nNorth,1000.5,0,1000,person0,100\nNorth,2001.5,1,2000,PERSON0,101\nNorth,3002.5,2,3000,person2,102\n"},
		{"numbers off", "s = crucible_clean('sales', numbers=False, out='n.csv')" + show,
			"[]\n[('region', 15, 2, {'North': ['north', 'NORTH'], 'South': ['south']})]\n[]\n" +
				"region,amount,rate,units,name,code\nNorth,\"$1,000.50\",0%,\"1,000\",person0,100\n"},
		{"case off, no trim", "s = crucible_clean('sales', case=False, trim=False, out='c.csv')" + show,
			"[('amount', 39, 1, 'currency', '$'), ('rate', 40, 0, 'percent', '%'), ('units', 40, 0, 'thousands', '')]\n[]\n" +
				"[(7, 'amount', 'call us', 'not a number')]\nregion,amount,rate,units,name,code\nNorth,1000.5,0,1000,person0,100\nnorth,2001.5,1,2000,PERSON0,101\n NORTH ,3002.5,2,3000,person2,102\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := a.Session.Exec(ctx, sandbox.Cell{Code: tc.code})
			if err != nil {
				t.Fatal(err)
			}
			got := string(res.Stdout)
			if res.Error != nil {
				got = res.Error.Type + ": " + res.Error.Message
			}
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// The summary prints as a short report, however many warnings: every
// count, the first warnings, and how many there are in all.
func TestCrucibleCleanReportIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("when,price\n")
	for i := range 3000 {
		when := fmt.Sprintf("2024-01-%02d", 1+i%28)
		if i%2 == 0 {
			when = fmt.Sprintf("later %d", i)
		}
		fmt.Fprintf(&b, "%s,\"%d,%03d\"\n", when, 1+i/1000, i%1000)
	}
	a := openAnalysis(t, newRuntime(t), Dataset{Name: "big.csv", Content: []byte(b.String())})
	if err := a.loadHelpers(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, err := a.Session.Exec(context.Background(), sandbox.Cell{Code: "s = crucible_clean('big', dates='when')\nprint(s)\nprint(len(s['warnings']), s['warnings_total'])"})
	if err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("cell: %v %s %+v", err, res.Status, res.Error)
	}
	out := string(res.Stdout)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, want := range []string{
		"cleaned data/big.csv -> cleaned.csv: 3000 rows in, 3000 out, 0 duplicates removed",
		"dates when: 1500 parsed, 1500 not dates (50.0% parsed), written %Y-%m-%d",
		"numbers price: 3000 converted from thousands text, 0 not numbers",
		"warning: row 1, when: 'later 0' not a date",
		"... 1500 warnings in all (summary['warnings'] lists the first 1000)",
		"1000 1500",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	if len(lines) > 41 || len(out) > 6000 {
		t.Errorf("the report has %d lines, %d bytes; want at most 40 lines and the count", len(lines)-1, len(out))
	}
	// Sixty columns of numbers: a line each would be too many.
	res, err = a.Session.Exec(context.Background(), sandbox.Cell{Code: `import pandas as pd
s = crucible_clean(pd.DataFrame({"c%d" % i: ["1,000", "2,000"] for i in range(60)}), out="wide.csv")
print(s)
print(len(s["numbers"]))`})
	if err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("cell: %v %s %+v", err, res.Status, res.Error)
	}
	out = string(res.Stdout)
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 40 || !strings.Contains(out, "... 24 more lines: the summary's dates, numbers and case hold every column") || lines[39] != "60" {
		t.Errorf("the report of 60 number columns has %d lines:\n%s", len(lines)-1, out)
	}
}
