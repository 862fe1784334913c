package main

import (
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/analyst"
	"github.com/crucible-sandbox/crucible/service"
)

// printCleaning shows everything a cleaning summary holds: the columns of
// numbers it converted with their kind and unit, and the spellings it
// unified, as well as the counts, dates and warnings.
func TestPrintCleaning(t *testing.T) {
	c := service.CleanSummary{
		Source: "data/sales.csv", Output: "sales_clean.csv", RowsIn: 40, RowsOut: 40,
		Changed: map[string]int{"amount": 39, "region": 15},
		Numbers: map[string]analyst.NumberParse{
			"rate":   {Converted: 40, Kind: "percent", Unit: "%"},
			"amount": {Converted: 39, Failed: 1, Kind: "currency", Unit: "$"},
			"units":  {Converted: 40, Kind: "thousands"},
		},
		Case:          map[string]analyst.CaseFold{"region": {Changed: 15, Groups: 2, Spellings: map[string][]string{"South": {"south"}, "North": {"north", "NORTH"}}}},
		Warnings:      []analyst.CleanWarning{{Row: 7, Column: "amount", Value: "call us", Reason: "not a number"}},
		WarningsTotal: 1,
	}
	var b strings.Builder
	printCleaning(&b, c)
	want := `
cleaning data/sales.csv → sales_clean.csv: 40 rows in, 40 out, 0 duplicates removed
  values changed: amount 39, region 15
  numbers amount: 39 converted from currency text in $, 1 not numbers
  numbers rate: 40 converted from percent text in %, 0 not numbers
  numbers units: 40 converted from thousands text, 0 not numbers
  case region: 15 values rewritten in 2 categories: "North" for ["north" "NORTH"], "South" for ["south"]
  warning: row 7, amount: "call us" not a number
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
