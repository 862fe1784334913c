package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// The OpenAPI tests check server/openapi.json against the source of truth:
// the routes server.go registers, the JSON tags of the contract's Go types,
// and the status, language and error-code constants. They need neither root
// nor a sandbox.

// openAPIDoc reads and parses openapi.json from the package directory.
func openAPIDoc(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("openapi.json is not JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("openapi.json holds more than one JSON value")
	}
	return doc
}

// obj returns v[key] as a JSON object, failing t if it is not one.
func obj(t *testing.T, v map[string]any, key string) map[string]any {
	t.Helper()
	o, ok := v[key].(map[string]any)
	if !ok {
		t.Fatalf("%q is %T, not an object", key, v[key])
	}
	return o
}

// resolve follows a local JSON pointer such as "#/components/schemas/Result".
func resolve(doc map[string]any, ref string) (any, error) {
	if !strings.HasPrefix(ref, "#/") {
		return nil, errors.New("not a local reference")
	}
	var cur any = doc
	for _, tok := range strings.Split(ref[2:], "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, errors.New("walks into a non-object at " + tok)
		}
		if cur, ok = m[tok]; !ok {
			return nil, errors.New("no " + tok)
		}
	}
	return cur, nil
}

// deref returns v, or what it refers to if it is a {"$ref": ...}.
func deref(t *testing.T, doc map[string]any, v any) map[string]any {
	t.Helper()
	m, _ := v.(map[string]any)
	if ref, ok := m["$ref"].(string); ok {
		r, err := resolve(doc, ref)
		if err != nil {
			t.Fatalf("$ref %s: %v", ref, err)
		}
		m, _ = r.(map[string]any)
	}
	if m == nil {
		t.Fatalf("%v is not an object", v)
	}
	return m
}

func TestOpenAPIVersion(t *testing.T) {
	doc := openAPIDoc(t)
	v, _ := doc["openapi"].(string)
	if !strings.HasPrefix(v, "3.0.") {
		t.Errorf("openapi = %q, want 3.0.x", v)
	}
	info := obj(t, doc, "info")
	for _, k := range []string{"title", "version"} {
		if s, _ := info[k].(string); s == "" {
			t.Errorf("info.%s is missing", k)
		}
	}
}

// routePattern matches a route registration in server.go, such as
// m.HandleFunc("GET /v1/runs/{id}", s.getRun).
var routePattern = regexp.MustCompile(`\.Handle(?:Func)?\(\s*"([A-Z]+) ([^"]+)"`)

// serverRoutes returns the routes server.go registers, as "METHOD path" in
// OpenAPI's notation ({path...} becomes {path}).
func serverRoutes(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("server.go")
	if err != nil {
		t.Fatal(err)
	}
	matches := routePattern.FindAllStringSubmatch(string(src), -1)
	calls := regexp.MustCompile(`\.Handle(?:Func)?\(`).FindAllIndex(src, -1)
	if len(matches) != len(calls) || len(matches) == 0 {
		t.Fatalf("server.go has %d Handle/HandleFunc calls but %d match %v: update the test's pattern", len(calls), len(matches), routePattern)
	}
	var routes []string
	for _, m := range matches {
		// {$} anchors a pattern at its end: the path is the part before.
		routes = append(routes, m[1]+" "+strings.ReplaceAll(strings.TrimSuffix(m[2], "{$}"), "...}", "}"))
	}
	return routes
}

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

func TestOpenAPIRoutesMatchServer(t *testing.T) {
	doc := openAPIDoc(t)
	routes := serverRoutes(t)
	paths := obj(t, doc, "paths")

	var documented []string
	opIDs := map[string]string{}
	for p, item := range paths {
		for method, op := range item.(map[string]any) {
			switch method {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
			default:
				continue
			}
			route := strings.ToUpper(method) + " " + p
			documented = append(documented, route)
			o := op.(map[string]any)
			id, _ := o["operationId"].(string)
			if id == "" {
				t.Errorf("%s: no operationId", route)
			} else if other, dup := opIDs[id]; dup {
				t.Errorf("%s: operationId %q is also %s's", route, id, other)
			}
			opIDs[id] = route
			if s, _ := o["summary"].(string); s == "" {
				t.Errorf("%s: no summary", route)
			}
			if r, _ := o["responses"].(map[string]any); len(r) == 0 {
				t.Errorf("%s: no responses", route)
			}
			// Every path template parameter is declared, in: path, required.
			declared := map[string]bool{}
			var params []any
			if ps, ok := item.(map[string]any)["parameters"].([]any); ok {
				params = append(params, ps...)
			}
			if ps, ok := o["parameters"].([]any); ok {
				params = append(params, ps...)
			}
			for _, pv := range params {
				prm := deref(t, doc, pv)
				if prm["in"] == "path" {
					if prm["required"] != true {
						t.Errorf("%s: path parameter %v is not required", route, prm["name"])
					}
					declared[prm["name"].(string)] = true
				}
			}
			for _, m := range pathParam.FindAllStringSubmatch(p, -1) {
				if !declared[m[1]] {
					t.Errorf("%s: path parameter {%s} is not declared", route, m[1])
				}
				delete(declared, m[1])
			}
			for name := range declared {
				t.Errorf("%s: declares path parameter %q that is not in the path", route, name)
			}
		}
	}
	sort.Strings(routes)
	sort.Strings(documented)
	if !slices.Equal(routes, documented) {
		t.Errorf("documented routes differ from server.go's:\nserver.go:  %q\nopenapi.json: %q", routes, documented)
	}
}

func TestOpenAPIRefsResolve(t *testing.T) {
	doc := openAPIDoc(t)
	n := 0
	var walk func(where string, v any)
	walk = func(where string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"]; ok {
				n++
				s, _ := ref.(string)
				if _, err := resolve(doc, s); err != nil {
					t.Errorf("%s: $ref %q does not resolve: %v", where, ref, err)
				}
			}
			for k, x := range v {
				walk(where+"/"+k, x)
			}
		case []any:
			for _, x := range v {
				walk(where+"[]", x)
			}
		}
	}
	walk("#", doc)
	if n == 0 {
		t.Error("no $ref at all")
	}
}

// jsonFields returns the JSON names of t's fields, and which of them are
// always present (no omitempty nor omitzero), as encoding/json sees them: embedded
// structs without a name of their own are flattened.
func jsonFields(t reflect.Type) (names []string, always []string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			n, a := jsonFields(f.Type)
			names, always = append(names, n...), append(always, a...)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
		if o := strings.Split(opts, ","); !slices.Contains(o, "omitempty") && !slices.Contains(o, "omitzero") {
			always = append(always, name)
		}
	}
	return names, always
}

// schemaFields returns the properties and required names of a schema,
// gathered through its allOf.
func schemaFields(t *testing.T, doc map[string]any, schema map[string]any) (props, required []string) {
	t.Helper()
	if ps, ok := schema["properties"].(map[string]any); ok {
		for name := range ps {
			props = append(props, name)
		}
	}
	if rs, ok := schema["required"].([]any); ok {
		for _, r := range rs {
			required = append(required, r.(string))
		}
	}
	if all, ok := schema["allOf"].([]any); ok {
		for _, s := range all {
			p, r := schemaFields(t, doc, deref(t, doc, s))
			props, required = append(props, p...), append(required, r...)
		}
	}
	return props, required
}

func TestOpenAPISchemasMatchGoTypes(t *testing.T) {
	doc := openAPIDoc(t)
	schemas := obj(t, obj(t, doc, "components"), "schemas")
	types := map[string]reflect.Type{
		"Request":        reflect.TypeFor[sandbox.Request](),
		"Limits":         reflect.TypeFor[sandbox.Limits](),
		"File":           reflect.TypeFor[sandbox.File](),
		"Result":         reflect.TypeFor[sandbox.Result](),
		"ExecError":      reflect.TypeFor[sandbox.ExecError](),
		"Artifact":       reflect.TypeFor[sandbox.Artifact](),
		"Display":        reflect.TypeFor[sandbox.Display](),
		"Metrics":        reflect.TypeFor[sandbox.Metrics](),
		"NetworkLog":     reflect.TypeFor[sandbox.NetworkLog](),
		"Connection":     reflect.TypeFor[sandbox.Connection](),
		"SessionRequest": reflect.TypeFor[sandbox.SessionRequest](),
		"Cell":           reflect.TypeFor[sandbox.Cell](),
		"FileInfo":       reflect.TypeFor[sandbox.FileInfo](),
		"Run":            reflect.TypeFor[api.Run](),
		"ArtifactMeta":   reflect.TypeFor[api.ArtifactMeta](),
		"RunResponse":    reflect.TypeFor[api.RunResponse](),
		"SessionInfo":    reflect.TypeFor[api.SessionInfo](),
		"SessionList":    reflect.TypeFor[api.SessionList](),
		"Image":          reflect.TypeFor[api.Image](),
		"ImageList":      reflect.TypeFor[api.ImageList](),
	}
	for name, typ := range types {
		t.Run(name, func(t *testing.T) {
			s, ok := schemas[name].(map[string]any)
			if !ok {
				t.Fatalf("no schema %s", name)
			}
			props, required := schemaFields(t, doc, s)
			fields, always := jsonFields(typ)
			sort.Strings(props)
			sort.Strings(fields)
			if !slices.Equal(props, fields) {
				t.Errorf("properties of %s differ from the JSON fields of %v:\nschema: %q\nGo:     %q", name, typ, props, fields)
			}
			// A field the Go type always encodes is required, and only those.
			sort.Strings(required)
			sort.Strings(always)
			if !slices.Equal(required, always) {
				t.Errorf("required of %s differs from the fields %v always encodes (no omitempty):\nschema: %q\nGo:     %q", name, typ, required, always)
			}
		})
	}
}

// enum returns the enum of the named component schema.
func enum(t *testing.T, doc map[string]any, name string) []string {
	t.Helper()
	s := obj(t, obj(t, obj(t, doc, "components"), "schemas"), name)
	var out []string
	for _, v := range s["enum"].([]any) {
		out = append(out, v.(string))
	}
	sort.Strings(out)
	return out
}

// constants returns the string values of the constants in file whose
// declarations match re's first group, sorted.
func constants(t *testing.T, file string, re *regexp.Regexp) []string {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range re.FindAllStringSubmatch(string(src), -1) {
		out = append(out, m[1])
	}
	if len(out) == 0 {
		t.Fatalf("no constants matching %v in %s", re, file)
	}
	sort.Strings(out)
	return out
}

func TestOpenAPIEnums(t *testing.T) {
	doc := openAPIDoc(t)

	var langs []string
	for _, l := range sandbox.Languages() {
		langs = append(langs, string(l))
	}
	sort.Strings(langs)
	if got := enum(t, doc, "Language"); !slices.Equal(got, langs) {
		t.Errorf("Language enum = %q, want %q", got, langs)
	}
	names := slices.Clone(langs)
	for _, l := range sandbox.Languages() {
		names = append(names, l.Aliases()...)
	}
	sort.Strings(names)
	if got := enum(t, doc, "LanguageName"); !slices.Equal(got, names) {
		t.Errorf("LanguageName enum = %q, want every name sandbox.ParseLanguage takes, %q", got, names)
	}

	statuses := constants(t, "../sandbox/result.go", regexp.MustCompile(`(?m)^\s*Status\w+\s+Status\s*=\s*"(\w+)"`))
	if got := enum(t, doc, "Status"); !slices.Equal(got, statuses) {
		t.Errorf("Status enum = %q, want sandbox's %q", got, statuses)
	}
	runStatuses := append(slices.Clone(statuses), string(api.StatusQueued), string(api.StatusRunning), string(api.StatusInterrupted), string(api.StatusLost))
	sort.Strings(runStatuses)
	if got := enum(t, doc, "RunStatus"); !slices.Equal(got, runStatuses) {
		t.Errorf("RunStatus enum = %q, want %q", got, runStatuses)
	}
	for _, s := range runStatuses {
		if !api.ValidStatus(sandbox.Status(s)) {
			t.Errorf("RunStatus %q is not a api.ValidStatus", s)
		}
	}

	var mimes []any
	for _, m := range sandbox.DisplayMIMEs {
		mimes = append(mimes, m)
	}
	display := obj(t, obj(t, obj(t, obj(t, doc, "components"), "schemas"), "Display"), "properties")
	if got := obj(t, display, "mime")["enum"]; !reflect.DeepEqual(got, mimes) {
		t.Errorf("Display.mime enum = %v, want sandbox.DisplayMIMEs %v", got, mimes)
	}

	codes := constants(t, "../api/errors.go", regexp.MustCompile(`(?m)^\s*Code\w+\s*=\s*"(\w+)"`))
	if got := enum(t, doc, "ErrorCode"); !slices.Equal(got, codes) {
		t.Errorf("ErrorCode enum = %q, want api/errors.go's %q", got, codes)
	}
}

// docRuntime is a Runtime that runs nothing, enough to build a Server.
type docRuntime struct{}

func (docRuntime) Run(context.Context, sandbox.Request) (sandbox.Result, error) {
	return sandbox.Result{}, errors.New("doc runtime: no runs")
}

func (docRuntime) NewSession(context.Context, sandbox.SessionRequest) (sandbox.Session, error) {
	return nil, errors.New("doc runtime: no sessions")
}

func (docRuntime) Session(string) (sandbox.Session, bool) { return nil, false }

func TestOpenAPIServed(t *testing.T) {
	srv, _ := newServer(t, config{Config: service.Config{Runtime: docRuntime{}}})
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://localhost/openapi.json", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /openapi.json: status %d, body %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	want, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rec.Body.Bytes(), want) {
		t.Error("GET /openapi.json does not answer openapi.json")
	}

	rec = httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "http://localhost/openapi.json", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /openapi.json: status %d, want 405", rec.Code)
	}
}

// TestOpenAPIBrowserRefusals: every operation documents the 403 of the
// browser checks (browser.go), which any route may answer, naming their
// fields, and every operation that reads a JSON body (and POST /mcp) the
// 415 of a body of another type.
func TestOpenAPIBrowserRefusals(t *testing.T) {
	doc := openAPIDoc(t)
	for p, item := range obj(t, doc, "paths") {
		for method, op := range item.(map[string]any) {
			o, ok := op.(map[string]any)
			if !ok || o["responses"] == nil {
				continue
			}
			route := strings.ToUpper(method) + " " + p
			responses := obj(t, o, "responses")
			if r, _ := responses["403"].(map[string]any); r["$ref"] != "#/components/responses/Forbidden" && r["$ref"] != "#/components/responses/Withheld" {
				t.Errorf("%s: 403 is %v, want the Forbidden (or Withheld) response", route, responses["403"])
			} else if d, _ := deref(t, doc, r)["description"].(string); !strings.Contains(d, "field Host") || !strings.Contains(d, "field Sec-Fetch-Site or Origin") {
				t.Errorf("%s: the 403 does not name the fields Host, Sec-Fetch-Site and Origin of the browser checks: %q", route, d)
			}
			rb, _ := o["requestBody"].(map[string]any)
			content, _ := rb["content"].(map[string]any)
			_, readsJSON := content["application/json"]
			r, has415 := responses["415"].(map[string]any)
			if want := readsJSON || route == "POST /mcp"; has415 != want || want && r["$ref"] != "#/components/responses/UnsupportedMediaType" {
				t.Errorf("%s: 415 is %v; want the UnsupportedMediaType response: %v", route, responses["415"], want)
			}
		}
	}
}
