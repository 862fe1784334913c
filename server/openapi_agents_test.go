package server_test

import (
	"reflect"
	"regexp"
	"slices"
	"sort"
	"testing"

	"github.com/crucible-sandbox/crucible/api"
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
	sort.Strings(statuses)
	if got := enum(t, doc, "AgentRunStatus"); !slices.Equal(got, statuses) {
		t.Errorf("AgentRunStatus enum = %q, want %q", got, statuses)
	}
}
