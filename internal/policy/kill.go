package policy

import (
	"fmt"
	"slices"
	"strings"
)

// Kill lists what `run --isolate` has the kernel kill a process of the
// traced tree for (internal/guard's Kill): absolute paths, "~/" for the
// home; a directory covers what lies below it.
type Kill struct {
	// Exec are binaries the tree may not run.
	Exec []string `yaml:"exec"`
	// Write are files the tree may not open for writing: persistence and
	// privilege paths.
	Write []string `yaml:"write"`
}

// checkKill refuses kill paths the kernel side cannot match: relative
// ones, and patterns (it matches files, not globs).
func checkKill(k Kill) error {
	for _, p := range append(slices.Clone(k.Exec), k.Write...) {
		if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~/") {
			return fmt.Errorf("kill: %q: want an absolute path or ~/PATH", p)
		}
		if strings.ContainsAny(p, "*?[") {
			return fmt.Errorf("kill: %q: patterns are not supported (name the file, or a directory for what lies below it)", p)
		}
	}
	return nil
}
