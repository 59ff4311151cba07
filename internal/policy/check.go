package policy

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Checking a policy file
//
// A team edits its policy by hand and wants every mistake at once, each
// with the line to fix: `policy check` shows them all, Parse refuses the
// file with the first. Both go through decodeFile, which checks the keys,
// the value types, the version, the rules section and every list entry
// (egress entries, path and command patterns, program names) against the
// YAML tree, so each problem names the line of the node it is about.

// Check validates the policy file content data, named name in the
// errors, and returns every problem it finds, in line order, each one
// line "name:LINE: what". nil means Parse accepts the file.
func Check(data []byte, name string) []error {
	_, _, errs := decodeFile(data, name)
	if len(errs) == 0 {
		if _, err := Parse(data, name); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// FileError is one problem of a policy file, at a line (0 when it is
// about the file as a whole). Its message is "name:LINE: what".
type FileError struct {
	Name string
	Line int
	Err  error
}

func (e *FileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.Name, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Name, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// problems collects a file's errors with their lines.
type problems struct {
	name string
	list []problem
}

type problem struct {
	line int
	err  error
}

// add records the problem err found at line (0: the file as a whole).
func (ps *problems) add(line int, err error) {
	ps.list = append(ps.list, problem{line, err})
}

// addf records a problem at line, formatted with fmt.Errorf (so %w works).
func (ps *problems) addf(line int, format string, args ...any) {
	ps.add(line, fmt.Errorf(format, args...))
}

// errors returns the problems in line order, as *FileError.
func (ps *problems) errors() []error {
	if len(ps.list) == 0 {
		return nil
	}
	slices.SortStableFunc(ps.list, func(a, b problem) int { return cmp.Compare(a.line, b.line) })
	out := make([]error, 0, len(ps.list))
	for _, p := range ps.list {
		out = append(out, &FileError{Name: ps.name, Line: p.line, Err: p.err})
	}
	return out
}

// decodeFile parses data into the file's shape and checks it; root is
// the YAML tree. On a syntax error it returns that error alone.
func decodeFile(data []byte, name string) (*file, *yaml.Node, []error) {
	ps := &problems{name: name}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		line, msg := yamlLine(oneLine(err))
		ps.add(line, errors.New(msg))
		return nil, nil, ps.errors()
	}
	checkKeys(&root, reflect.TypeFor[file](), "", ps)
	var f file
	if err := root.Decode(&f); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			for _, e := range te.Errors {
				line, msg := yamlLine(e)
				ps.add(line, errors.New(msg))
			}
		} else {
			ps.add(0, errors.New(oneLine(err)))
		}
	}
	top := mapping(&root)
	if f.Version != 0 && f.Version != 1 {
		ps.addf(valueLine(top, "version"), "version %d is not supported (want 1)", f.Version)
	}
	checkRules(top, ps)
	checkEntries(top, ps)
	return &f, &root, ps.errors()
}

// reYAMLLine finds the line yaml.v3 puts in its messages.
var reYAMLLine = regexp.MustCompile(`^line (\d+): `)

// yamlLine splits yaml.v3's "line N: what" into N and what.
func yamlLine(msg string) (int, string) {
	m := reYAMLLine.FindStringSubmatch(msg)
	if m == nil {
		return 0, msg
	}
	n, _ := strconv.Atoi(m[1])
	return n, msg[len(m[0]):]
}

// checkRules checks the rules section: known ids, valid severities.
func checkRules(top *yaml.Node, ps *problems) {
	rules := child(top, "rules")
	if rules == nil || rules.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(rules.Content); i += 2 {
		k, v := rules.Content[i], rules.Content[i+1]
		if !knownRule(k.Value) {
			ps.addf(k.Line, "%w %q (rules: %s)", ErrUnknownRule, k.Value, strings.Join(RuleIDs(), ", "))
			continue
		}
		if sev := child(v, "severity"); sev != nil && sev.Kind == yaml.ScalarNode && !ValidSeverity(sev.Value) {
			ps.addf(k.Line, "rule %s: %w %q (want one of %s)", k.Value, ErrBadSeverity, sev.Value, strings.Join(Severities, ", "))
		}
	}
}

// entryKind says how the entries of a list are checked.
type entryKind int

const (
	hostEntry    entryKind = iota // an egress entry (parseHostRule)
	pathEntry                     // a path pattern, or a PathRule mapping
	commandEntry                  // a command pattern
	nameEntry                     // a program name glob
	killEntry                     // a kill rule's path (checkKill)
)

// listKinds are the file's lists, by key path, and their entries' kind.
var listKinds = []struct {
	key  []string
	kind entryKind
}{
	{[]string{"egress", "allow"}, hostEntry},
	{[]string{"registries"}, hostEntry},
	{[]string{"publish_hosts"}, hostEntry},
	{[]string{"sensitive_paths"}, pathEntry},
	{[]string{"agent_config_paths"}, pathEntry},
	{[]string{"tamper_paths"}, pathEntry},
	{[]string{"noise_paths"}, pathEntry},
	{[]string{"test_files"}, pathEntry},
	{[]string{"artifacts"}, pathEntry},
	{[]string{"allowed_paths"}, pathEntry},
	{[]string{"test_runners"}, commandEntry},
	{[]string{"package_managers"}, commandEntry},
	{[]string{"publish_commands"}, commandEntry},
	{[]string{"build_tools"}, nameEntry},
	{[]string{"agent_programs"}, nameEntry},
	{[]string{"allowed_programs"}, nameEntry},
	{[]string{"kill", "exec"}, killEntry},
	{[]string{"kill", "write"}, killEntry},
}

// checkEntries checks every entry of every list, each at its own line.
func checkEntries(top *yaml.Node, ps *problems) {
	for _, l := range listKinds {
		n := top
		for _, k := range l.key {
			n = child(n, k)
		}
		if n == nil || n.Kind != yaml.SequenceNode {
			continue
		}
		key := strings.Join(l.key, ".")
		for _, e := range n.Content {
			if err := checkEntry(l.kind, e); err != nil {
				ps.addf(e.Line, "%s: %w", key, err)
			}
		}
	}
}

// checkEntry checks one list entry e of kind k.
func checkEntry(k entryKind, e *yaml.Node) error {
	if k == pathEntry && e.Kind == yaml.MappingNode {
		var r PathRule
		if e.Decode(&r) != nil {
			return nil // the type error is reported already
		}
		_, err := compilePathSet([]PathRule{r})
		return err
	}
	if e.Kind != yaml.ScalarNode {
		return nil // a type error, reported already
	}
	var err error
	switch k {
	case hostEntry:
		_, err = parseHostRule(e.Value)
	case pathEntry:
		_, err = compilePathSet([]PathRule{{Path: e.Value}})
	case commandEntry:
		_, err = compileCommands([]string{e.Value})
	case nameEntry:
		if _, err = path.Match(e.Value, ""); err != nil {
			err = fmt.Errorf("program name %q: %w", e.Value, err)
		}
	case killEntry:
		err = checkKill(Kill{Exec: []string{e.Value}})
	}
	return err
}

// mapping returns the top-level mapping of a document node.
func mapping(root *yaml.Node) *yaml.Node {
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		return root.Content[0]
	}
	return root
}

// child returns the value of key in mapping n, nil when there is none.
func child(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// valueLine returns the line of key's value in mapping n, 0 for none.
func valueLine(n *yaml.Node, key string) int {
	if v := child(n, key); v != nil {
		return v.Line
	}
	return 0
}

// checkKeys walks the YAML tree against the file's Go type and reports
// every key the type does not have, with its line.
func checkKeys(n *yaml.Node, t reflect.Type, where string, ps *problems) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			checkKeys(c, t, where, ps)
		}
		return
	case yaml.AliasNode:
		checkKeys(n.Alias, t, where, ps)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return // a scalar form (PathRule) or a type error Decode reports
		}
		fields := map[string]reflect.Type{}
		var known []string
		for i := range t.NumField() {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if tag == "" || tag == "-" || !f.IsExported() {
				continue
			}
			fields[tag] = f.Type
			known = append(known, tag)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			if !ok {
				in := "at the top level"
				if where != "" {
					in = "in " + where
				}
				ps.addf(k.Line, "%w %q %s (known: %s)", ErrUnknownKey, k.Value, in, strings.Join(known, ", "))
				continue
			}
			checkKeys(v, ft, join(where, k.Value), ps)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			checkKeys(n.Content[i+1], t.Elem(), join(where, n.Content[i].Value), ps)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for _, c := range n.Content {
			checkKeys(c, t.Elem(), where, ps)
		}
	}
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

// oneLine folds yaml's multi-line errors ("yaml: unmarshal errors:\n  line
// 3: …") into one line.
func oneLine(err error) string {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	s = strings.ReplaceAll(s, "unmarshal errors:\n", "")
	fields := strings.Fields(s)
	return strings.Join(fields, " ")
}

// keyLine finds the line of key under the top-level mapping key parent.
func keyLine(root *yaml.Node, parent, key string) int {
	p := child(mapping(root), parent)
	if p == nil {
		return 0
	}
	for j := 0; j+1 < len(p.Content); j += 2 {
		if p.Content[j].Value == key {
			return p.Content[j].Line
		}
	}
	return p.Line
}
