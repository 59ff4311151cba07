// Package schematest keeps polygraph's JSON contracts (docs/schema) true:
// Generate derives a contract's JSON Schema from the Go type that writes
// it, Check fails a test when the committed schema and the type part
// (`-update` rewrites the file: a changed contract is a reviewed diff),
// and Validate checks real output against the committed schema. The
// schemas forbid properties they do not name, so a field added, renamed
// or dropped in an internal type shows up here, not downstream.
package schematest

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/invopop/jsonschema"
	sv "github.com/santhosh-tekuri/jsonschema/v6"
)

// Generate returns the JSON Schema of v's type, titled title, with every
// object closed to properties it does not name and the fields that are
// always written required.
func Generate(v any, id, title, description string) []byte {
	r := &jsonschema.Reflector{DoNotReference: false, ExpandedStruct: true}
	// time.Time and the like keep their own formats; nothing else is
	// open to extra properties.
	s := r.Reflect(v)
	// An embedded pointer is a group of fields present together or not
	// at all (event.Event's Process, Object, Network...): none of its
	// fields is required of every object.
	optional := map[string][]string{}
	// A nil slice or map that is always written is written as null.
	nullable := map[string][]string{}
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Pointer {
				optional[t.Name()] = append(optional[t.Name()], Fields(reflect.New(f.Type.Elem()).Interface())...)
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if k := f.Type.Kind(); (k == reflect.Slice || k == reflect.Map) && name != "" && name != "-" && !strings.Contains(opts, "omitempty") {
				nullable[t.Name()] = append(nullable[t.Name()], name)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeOf(v))
	def := func(name string) *jsonschema.Schema {
		if d := s.Definitions[name]; d != nil {
			return d
		}
		if reflect.TypeOf(v).Elem().Name() == name {
			return s // the expanded top-level type
		}
		return nil
	}
	for name, fields := range optional {
		if d := def(name); d != nil {
			d.Required = slices.DeleteFunc(d.Required, func(r string) bool { return slices.Contains(fields, r) })
		}
	}
	for name, fields := range nullable {
		d := def(name)
		if d == nil || d.Properties == nil {
			continue
		}
		for _, f := range fields {
			if p, ok := d.Properties.Get(f); ok {
				d.Properties.Set(f, &jsonschema.Schema{AnyOf: []*jsonschema.Schema{p, {Type: "null"}}})
			}
		}
	}
	s.ID = jsonschema.ID(id)
	s.Title = title
	s.Description = description
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// Check compares the committed schema at path with Generate's; update
// rewrites it.
func Check(t testing.TB, path string, generated []byte, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, generated, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to write it)", err)
	}
	if !bytes.Equal(have, generated) {
		t.Errorf("%s does not match the Go types that write the contract: a field was added, renamed or dropped. "+
			"If the change is meant, run the test with -update and review the schema's diff; within a schema version, "+
			"fields may only be added.", path)
	}
}

// Validate checks each JSON document in docs against the schema at path.
func Validate(t testing.TB, path string, docs ...[]byte) {
	t.Helper()
	c := sv.NewCompiler()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := sv.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	url := "file://" + strings.TrimPrefix(path, "/")
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatalf("compile %s: %v", path, err)
	}
	for i, d := range docs {
		v, err := sv.UnmarshalJSON(bytes.NewReader(d))
		if err != nil {
			t.Fatalf("document %d is not JSON: %v", i, err)
		}
		if err := sch.Validate(v); err != nil {
			t.Errorf("document %d does not satisfy %s: %v", i, path, err)
		}
	}
}

// Fields lists the JSON property names of struct type v, embedded
// structs' included: for tests that want to name what a contract holds.
func Fields(v any) []string {
	var out []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous {
				walk(f.Type)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name != "" && name != "-" && f.IsExported() {
				out = append(out, name)
			}
		}
	}
	walk(reflect.TypeOf(v))
	return out
}
