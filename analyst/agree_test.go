package analyst

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// mixedDates returns issue 25's column as a CSV of id and when: 386
// dates written in three forms in turn (2024-02-23, 14/06/2024 and Aug
// 20, 2024: day first, as some days over 12 show) and 12 values that are
// not dates (3%), one every 33 rows; and, for each row, the date as ISO
// text, or "" for one that is not a date.
func mixedDates() (csv string, want []string) {
	junk := []string{"TBD", "pending", "2024-02-30", "31/02/2024", "sometime", "Q3 2024"}
	var b strings.Builder
	b.WriteString("id,when\n")
	k, j := 0, 0
	for i := range 398 {
		if i%33 == 32 {
			fmt.Fprintf(&b, "%d,%s\n", i, junk[j%len(junk)])
			want = append(want, "")
			j++
			continue
		}
		d := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, k*37%366)
		text := [3]string{d.Format("2006-01-02"), d.Format("02/01/2006"), d.Format("Jan 2, 2006")}[k%3]
		if strings.Contains(text, ",") {
			text = `"` + text + `"`
		}
		fmt.Fprintf(&b, "%d,%s\n", i, text)
		want = append(want, d.Format("2006-01-02"))
		k++
	}
	return b.String(), want
}

// cellJSON runs code in a's session and decodes the JSON it prints.
func cellJSON(t *testing.T, a *Analysis, code string, v any) {
	t.Helper()
	res, err := a.Session.Exec(context.Background(), sandbox.Cell{Code: code})
	if err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("cell: %v %s %+v %s", err, res.Status, res.Error, res.Stderr)
	}
	if err := json.Unmarshal(res.Stdout, v); err != nil {
		t.Fatalf("the cell printed %q: %v", res.Stdout, err)
	}
}

// Issue 25's case, in a real session of the data-science image: a column
// mixing 2024-02-23, 14/06/2024 and Aug 20, 2024 with 3% of values that
// are not dates. The profile makes it a date column, says what share
// parsed and that the others are missing now; every date is the one
// written; and crucible_clean, on the same file, parses the same values
// to the same dates (and keeps the others as they were).
func TestMixedDatesProfileAndCleanAgree(t *testing.T) {
	content, want := mixedDates()
	a := openAnalysis(t, newRuntime(t), Dataset{Name: "orders.csv", Content: []byte(content)})
	c := column(t, a.Profile.Tables[0], "when")
	if !strings.HasPrefix(c.DType, "datetime64") || c.Inferred != "date from text" ||
		!hasWarning(c.Warnings, "386 of 398 values (97.0%) parse as dates; the other 12 are missing now") {
		t.Errorf("when: dtype %s, inferred %q, warnings %q; want a date column, 386 of 398 parsed", c.DType, c.Inferred, c.Warnings)
	}
	var loaded []string
	cellJSON(t, a, `import json, pandas as pd
print(json.dumps(["" if v is pd.NaT else v.strftime("%Y-%m-%d") for v in orders["when"]]))`, &loaded)
	if fmt.Sprint(loaded) != fmt.Sprint(want) {
		t.Errorf("the profile's dates differ from those written:\n%v\nwant\n%v", loaded, want)
	}

	if err := a.loadHelpers(context.Background()); err != nil {
		t.Fatal(err)
	}
	var cleaned struct {
		Dates DateParse `json:"dates"`
		When  []string  `json:"when"`
		Raw   []string  `json:"raw"`
	}
	cellJSON(t, a, `import json, pandas as pd
s = crucible_clean("orders", out="orders_clean.csv")
c = pd.read_csv("orders_clean.csv", dtype=str, keep_default_na=False)
r = pd.read_csv("data/orders.csv", dtype=str, keep_default_na=False)
print(json.dumps({"dates": s["dates"]["when"], "when": list(c["when"]), "raw": list(r["when"])}))`, &cleaned)
	if d := cleaned.Dates; d.Parsed != 386 || d.Failed != 12 || !d.DayFirst || d.Format != "%Y-%m-%d" {
		t.Errorf("crucible_clean's dates: %+v; want 386 parsed, 12 failed, day first", d)
	}
	for i, w := range want {
		if w == "" {
			w = cleaned.Raw[i] // kept as it was
		}
		if i >= len(cleaned.When) || cleaned.When[i] != w {
			t.Errorf("row %d: crucible_clean wrote %q, the profile %q (raw %q)", i+1, at(cleaned.When, i), want[i], cleaned.Raw[i])
		}
	}
}

// at is s[i], or "(none)" past its end.
func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "(none)"
}
