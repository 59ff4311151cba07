package otlp

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestAttributesDocumented: every attribute name the export uses is in
// docs/fleet.md, between backquotes.
func TestAttributesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/fleet.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, name := range attributeNames {
		if seen[name] {
			t.Errorf("%s listed twice in attributeNames", name)
		}
		seen[name] = true
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("%s is not documented in docs/fleet.md", name)
		}
	}
}

// TestAttributeNamesListed: every attr constant of names.go is in
// attributeNames, so the test above sees it.
func TestAttributeNamesListed(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "names.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, n := range attributeNames {
		listed[n] = true
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, id := range vs.Names {
				if !strings.HasPrefix(id.Name, "attr") || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					continue
				}
				if v, _ := strconv.Unquote(lit.Value); !listed[v] {
					t.Errorf("%s (%s) is not in attributeNames", id.Name, v)
				}
			}
		}
	}
}
