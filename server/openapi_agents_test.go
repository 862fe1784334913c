package server_test

import (
	"reflect"
	"regexp"
	"slices"
	"sort"
	"testing"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/swe"
)

// TestOpenAPIAgentSchemas checks the agent runs' schemas against their Go
// types, as TestOpenAPISchemasMatchGoTypes does for the others, and the
// AgentRunStatus enum against the statuses an agent run can have: the
// agent's own (agent/trace.go) and the API's (api/agentrun.go).
func TestOpenAPIAgentSchemas(t *testing.T) {
	doc := openAPIDoc(t)
	schemas := obj(t, obj(t, doc, "components"), "schemas")
	for name, typ := range map[string]reflect.Type{
		"AgentRunRequest": reflect.TypeFor[api.AgentRunRequest](),
		"AgentRun":        reflect.TypeFor[api.AgentRun](),
		"AgentRunList":    reflect.TypeFor[api.AgentRunList](),
		"AgentStep":       reflect.TypeFor[api.AgentStep](),
		"AgentCode":       reflect.TypeFor[api.AgentCode](),
		"AgentExecution":  reflect.TypeFor[api.AgentExecution](),
		"AgentApproval":   reflect.TypeFor[api.AgentApproval](),
		"ApprovalRequest": reflect.TypeFor[api.ApprovalRequest](),
		"AgentDecision":   reflect.TypeFor[api.AgentDecision](),
		"SWERepo":         reflect.TypeFor[swe.Repo](),
		"SWEOutcome":      reflect.TypeFor[api.SWEOutcome](),
		"TestReport":      reflect.TypeFor[swe.TestReport](),
		"TestCase":        reflect.TypeFor[swe.TestCase](),
	} {
		t.Run(name, func(t *testing.T) {
			s, ok := schemas[name].(map[string]any)
			if !ok {
				t.Fatalf("no schema %s", name)
			}
			props, required := schemaFields(t, doc, s)
			fields, always := jsonFields(typ)
			for _, l := range [][]string{props, required, fields, always} {
				sort.Strings(l)
			}
			if !slices.Equal(props, fields) {
				t.Errorf("properties of %s differ from the JSON fields of %v:\nschema: %q\nGo:     %q", name, typ, props, fields)
			}
			// AgentRunRequest.task is required, though Go encodes it
			// whatever it holds; limits is optional.
			if name == "AgentRunRequest" {
				always = []string{"task"}
			}
			if !slices.Equal(required, always) {
				t.Errorf("required of %s differs from the fields %v always encodes:\nschema: %q\nGo:     %q", name, typ, required, always)
			}
		})
	}
	statuses := constants(t, "../agent/trace.go", regexp.MustCompile(`(?m)^\s*Status\w+\s+Status\s*=\s*"(\w+)"`))
	statuses = append(statuses, constants(t, "../api/agentrun.go", regexp.MustCompile(`(?m)^\s*Agent\w+\s+AgentRunStatus\s*=\s*"(\w+)"`))...)
	statuses = append(statuses, constants(t, "../swe/swe.go", regexp.MustCompile(`(?m)^\s*Status\w+\s+Status\s*=\s*"(\w+)"`))...)
	sort.Strings(statuses)
	statuses = slices.Compact(statuses)
	if got := enum(t, doc, "AgentRunStatus"); !slices.Equal(got, statuses) {
		t.Errorf("AgentRunStatus enum = %q, want %q", got, statuses)
	}
	modes := constants(t, "../api/swe.go", regexp.MustCompile(`(?m)^\s*Mode\w+\s+AgentMode\s*=\s*"(\w+)"`))
	if got := enum(t, doc, "AgentMode"); !slices.Equal(got, modes) {
		t.Errorf("AgentMode enum = %q, want api's %q", got, modes)
	}
	kinds := constants(t, "../agent/trace.go", regexp.MustCompile(`(?m)^\s*Step\w+\s+StepKind\s*=\s*"(\w+)"`))
	kinds = append(kinds, constants(t, "../swe/swe.go", regexp.MustCompile(`(?m)^\s*Step\w+\s+StepKind\s*=\s*"(\w+)"`))...)
	sort.Strings(kinds)
	kinds = slices.Compact(kinds)
	step := obj(t, obj(t, obj(t, obj(t, obj(t, doc, "components"), "schemas"), "AgentStep"), "properties"), "kind")
	var got []string
	for _, k := range step["enum"].([]any) {
		got = append(got, k.(string))
	}
	sort.Strings(got)
	if !slices.Equal(got, kinds) {
		t.Errorf("AgentStep.kind enum = %q, want the agents' step kinds %q", got, kinds)
	}
	outcomes := constants(t, "../api/swetypes.go", regexp.MustCompile(`(?m)^\s*Test\w+\s+TestOutcome\s*=\s*"(\w+)"`))
	outcome := obj(t, obj(t, obj(t, obj(t, obj(t, doc, "components"), "schemas"), "TestCase"), "properties"), "outcome")
	got = nil
	for _, k := range outcome["enum"].([]any) {
		got = append(got, k.(string))
	}
	if !slices.Equal(got, outcomes) {
		t.Errorf("TestCase.outcome enum = %q, want swe's %q", got, outcomes)
	}
}
