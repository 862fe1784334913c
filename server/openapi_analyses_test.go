package server_test

import (
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/crucible-sandbox/crucible/analyst"
	"github.com/crucible-sandbox/crucible/api"
)

// TestOpenAPIAnalysisSchemas checks the analyses' schemas against their
// Go types, as TestOpenAPISchemasMatchGoTypes does for the others: the
// API's types, and the analyst's Profile and Answer, which the API serves
// as JSON.
func TestOpenAPIAnalysisSchemas(t *testing.T) {
	doc := openAPIDoc(t)
	schemas := obj(t, obj(t, doc, "components"), "schemas")
	for _, tc := range []struct {
		name string
		typ  reflect.Type
		// required, when set, replaces the fields Go always encodes: a
		// request's optional objects are encoded whatever they hold.
		required []string
	}{
		{"AnalysisRequest", reflect.TypeFor[api.AnalysisRequest](), []string{}},
		{"AnalysisDataset", reflect.TypeFor[api.AnalysisDataset](), nil},
		{"Analysis", reflect.TypeFor[api.Analysis](), nil},
		{"AnalysisList", reflect.TypeFor[api.AnalysisList](), nil},
		{"QuestionRequest", reflect.TypeFor[api.QuestionRequest](), nil},
		{"AnalysisQuestion", reflect.TypeFor[api.AnalysisQuestion](), nil},
		{"AnalysisQuestionList", reflect.TypeFor[api.AnalysisQuestionList](), nil},
		{"AnalysisProfile", reflect.TypeFor[analyst.Profile](), []string{}},
		{"AnalysisAnswer", reflect.TypeFor[analyst.Answer](), nil},
		{"AnalysisRebuild", reflect.TypeFor[api.AnalysisRebuild](), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ok := schemas[tc.name].(map[string]any)
			if !ok {
				t.Fatalf("no schema %s", tc.name)
			}
			props, required := schemaFields(t, doc, s)
			fields, always := jsonFields(tc.typ)
			if tc.required != nil {
				always = tc.required
			}
			for _, l := range [][]string{props, required, fields, always} {
				sort.Strings(l)
			}
			if !slices.Equal(props, fields) {
				t.Errorf("properties of %s differ from the JSON fields of %v:\nschema: %q\nGo:     %q", tc.name, tc.typ, props, fields)
			}
			if !slices.Equal(required, always) {
				t.Errorf("required of %s differs from the fields %v always encodes:\nschema: %q\nGo:     %q", tc.name, tc.typ, required, always)
			}
		})
	}
}
