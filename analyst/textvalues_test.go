package analyst

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// helpersAnalysis opens an analysis of a one-line dataset in a real
// session of the data-science image, with the helpers defined: their
// module (_crucible_analyst) holds the shared parser as tv.
func helpersAnalysis(t *testing.T) *Analysis {
	t.Helper()
	a := openAnalysis(t, newRuntime(t), Dataset{Name: "one.csv", Content: []byte("a\n1\n")})
	if err := a.loadHelpers(context.Background()); err != nil {
		t.Fatal(err)
	}
	return a
}

// Proves textvalues.parse_dates value by value, in the sandbox: each form
// read on its own in a mixed column, day first decided for the column,
// impossible dates and other text refused, zones. The parser's module is
// the helpers' own: the session's sys.modules does not hold it.
func TestParseDates(t *testing.T) {
	a := helpersAnalysis(t)
	var listed bool
	cellJSON(t, a, "import sys, json\nprint(json.dumps('crucible_textvalues' in sys.modules))", &listed)
	if listed {
		t.Error("crucible_textvalues is left in the session's sys.modules")
	}
	for _, tc := range []struct {
		name     string
		values   []string
		dayfirst string // None, True or False
		deflt    bool
		want     string // each date (NaT when not one), then the dayfirst used
	}{
		{"three forms, day first told by 14/06", []string{"2024-02-23", "14/06/2024", "Aug 20, 2024", "05/06/2024"}, "None", false,
			"2024-02-23 2024-06-14 2024-08-20 2024-06-05 True"},
		{"month first told by 06/14", []string{"06/14/2024", "05/06/2024"}, "None", true, "2024-06-14 2024-05-06 False"},
		{"ambiguous: the default decides", []string{"05/06/2024"}, "None", true, "2024-06-05 True"},
		{"the caller decides", []string{"14/06/2024", "05/06/2024"}, "False", false, "NaT 2024-05-06 False"},
		{"separators and short years", []string{"14.06.2024", "14-06-24", "1/2/24", "2024/02/23", "2024.2.3"}, "None", false,
			"2024-06-14 2024-06-14 2024-02-01 2024-02-23 2024-02-03 True"},
		{"month names", []string{"aug 20 2024", "AUGUST 20, 2024", "20 Aug 2024", "20-Aug-24", "Sept. 5, 2024", "1999-Feb-05", "A.D. 1999-Feb-05 00:58:29.0000"}, "None", false,
			"2024-08-20 2024-08-20 2024-08-20 2024-08-20 2024-09-05 1999-02-05 1999-02-05T00:58:29 False"},
		{"times", []string{"2024-02-23 10:30", "2024-02-23T10:30:05", "14/06/2024 3:45 PM", "Aug 20, 2024 23:59:59"}, "None", false,
			"2024-02-23T10:30:00 2024-02-23T10:30:05 2024-06-14T15:45:00 2024-08-20T23:59:59 True"},
		{"not dates", []string{"2024-02-30", "31/02/2024", "2024-13-45", "TBD", "Q3 2024", "20240223", "12", ""}, "None", false,
			"NaT NaT NaT NaT NaT NaT NaT NaT True"},
		{"one zone kept", []string{"2017-01-01T00:00:00+02:00", "2017-01-02T00:00:00+02:00"}, "None", false,
			"2017-01-01T00:00:00+02:00 2017-01-02T00:00:00+02:00 False"},
		{"mixed zones in UTC", []string{"2017-01-01T00:00:00Z", "2017-01-01T00:00:00+02:00", "2017-01-01 05:00"}, "None", false,
			"2017-01-01T00:00:00+00:00 2016-12-31T22:00:00+00:00 2017-01-01T05:00:00+00:00 False"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			values, _ := json.Marshal(tc.values)
			var got []string
			cellJSON(t, a, fmt.Sprintf(`import json
_d, _f = _crucible_analyst.tv.parse_dates(json.loads(%q), %s, %v)
print(json.dumps(["NaT" if v is _crucible_analyst.pd.NaT else (v.isoformat() if v != v.normalize() or v.tz else v.strftime("%%Y-%%m-%%d")) for v in _d] + [str(_f)]))`,
				values, tc.dayfirst, map[bool]string{true: "True", false: "False"}[tc.deflt]), &got)
			if s := strings.Join(got, " "); s != tc.want {
				t.Errorf("got  %s\nwant %s", s, tc.want)
			}
		})
	}
}

// Proves textvalues.number_form and parse_numbers, in the sandbox: the
// column's form (separators, decimal comma, one unit) from its values,
// then each value read in it or refused.
func TestParseNumbers(t *testing.T) {
	a := helpersAnalysis(t)
	for _, tc := range []struct {
		name    string
		values  []string
		decimal string // None, "." or ","
		want    string // kind, unit, then each number (nan when not one); or None
	}{
		{"thousands", []string{"30,849.83", "1,000", "12", "-1,234,567.5"}, "None", "plain  30849.83 1000.0 12.0 -1234567.5"},
		{"percent kept as written", []string{"5%", "7.5 %", "-0.25%", "100%"}, "None", "percent % 5.0 7.5 -0.25 100.0"},
		{"currency before and after, accounting negatives", []string{"$1,200.50", "-$5", "$-3", "($40.00)", "2 $"}, "None", "currency $ 1200.5 -5.0 -3.0 -40.0 2.0"},
		{"a currency code", []string{"EUR 12", "12.5 EUR", "EUR 1,000"}, "None", "currency EUR 12.0 12.5 1000.0"},
		{"decimal comma by the file", []string{"1.234,5", "3,5", "12"}, `","`, "decimal comma  1234.5 3.5 12.0"},
		{"decimal comma by the values", []string{"1.234,5", "3,5", "2.000"}, "None", "decimal comma  1234.5 3.5 2000.0"},
		{"values of another form refused", append(strings.Fields(strings.Repeat("$1,000 ", 60)), "€5", "1,2,3", "5%"), "None",
			"currency $ " + strings.Repeat("1000.0 ", 60) + "nan nan nan"},
		{"too few numbers", []string{"$1", "$2", "x", "y"}, "None", "None"},
		{"two currencies: no unit, not numbers", []string{"$1", "$2", "€1", "€2"}, "None", "None"},
		{"text", []string{"north", "south"}, "None", "None"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			values, _ := json.Marshal(tc.values)
			var got []any
			cellJSON(t, a, fmt.Sprintf(`import json
_v = json.loads(%q)
_f = _crucible_analyst.tv.number_form(_v, decimal=%s)
print(json.dumps(None if _f is None else [_f.kind, _f.unit] + [str(x) for x in _crucible_analyst.tv.parse_numbers(_v, _f)]))`,
				values, tc.decimal), &got)
			s := "None"
			if got != nil {
				parts := make([]string, len(got))
				for i, v := range got {
					parts[i] = fmt.Sprint(v)
				}
				s = strings.Join(parts, " ")
			}
			if s != strings.TrimSpace(tc.want) {
				t.Errorf("got  %s\nwant %s", s, tc.want)
			}
		})
	}
}

// A cell of 200,000 digits, or of a date and as many spaces, is neither a
// number nor a date, and costs the profile and crucible_clean no more
// than its length: the patterns that read numbers and dates never see
// text that long (some backtrack in time that grows faster than it).
func TestLongCellsAreNotParsed(t *testing.T) {
	long := strings.Repeat("1", 200_000) + "x"
	spaced := "2024-01-01" + strings.Repeat(" ", 200_000) + "x"
	content := "n,d\n\"" + long + "\"," + spaced + "\n" + lines(5, func(i int) string { return fmt.Sprintf("%d,2024-01-%02d", i, i+2) })
	start := time.Now()
	a := openAnalysis(t, newRuntime(t), Dataset{Name: "long.csv", Content: []byte(content)})
	if c := column(t, a.Profile.Tables[0], "n"); c.DType != "object" || !hasWarning(c.Warnings, "mixed types") {
		t.Errorf("n: %+v", c)
	}
	if c := column(t, a.Profile.Tables[0], "d"); c.DType != "object" || !hasWarning(c.Warnings, "likely dates kept as text: 5 of 6 values (83.3%) parse as dates") {
		t.Errorf("d: %+v", c)
	}
	if err := a.loadHelpers(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Dates map[string]DateParse `json:"dates"`
		Total int                  `json:"warnings_total"`
	}
	cellJSON(t, a, "import json\nprint(json.dumps(crucible_clean('long', out='l.csv')))", &got)
	if d := got.Dates["d"]; d.Parsed != 5 || d.Failed != 1 || got.Total != 1 {
		t.Errorf("crucible_clean: dates %+v, %d warnings; want 5 parsed, 1 failed", got.Dates, got.Total)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("the profile and the cleaning took %v", took)
	}
}
