package detect

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestRuleFilesStandAlone keeps a rule the unit the layout promises: a
// rule_<id>.go file may use the facts layer (facts.go, whose.go, paths.go,
// network.go, execs.go, needs.go, text.go, ...) and its own functions,
// never a function or type another rule file declares. A helper two rules
// share belongs in the facts layer, documented there.
func TestRuleFilesStandAlone(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("rule_*.go")
	if err != nil {
		t.Fatal(err)
	}
	declaredIn := map[string]string{} // top-level name -> rule file
	parsed := map[string]*ast.File{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed[f] = af
		for _, d := range af.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.Name != "init" {
					declaredIn[d.Name.Name] = f
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						declaredIn[s.Name.Name] = f
					case *ast.ValueSpec:
						for _, n := range s.Names {
							declaredIn[n.Name] = f
						}
					}
				}
			}
		}
	}
	if len(parsed) < 20 {
		t.Fatalf("only %d rule files found", len(parsed))
	}
	var bad []string
	for f, af := range parsed {
		ast.Inspect(af, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			if owner, ok := declaredIn[id.Name]; ok && owner != f && id.Name != "init" {
				bad = append(bad, f+" uses "+id.Name+" of "+owner)
			}
			return true
		})
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}
