package policy

import (
	"fmt"
	"slices"
)

// ruleIDs are the ids of the detection rules, which a policy file may
// name. The rules, with their metadata, live in internal/detect, which
// reads the policy and so cannot be imported here: each rule registers
// its id as the detector's package is initialised, so a new rule needs
// no change in this package.
var ruleIDs []string

// RegisterRule adds id to the rules a policy file may name, switched on in
// Default. Call it only from a package's initialisation (internal/detect's
// registry does), before any policy is made. It panics on an empty or
// repeated id.
func RegisterRule(id string) {
	if id == "" || slices.Contains(ruleIDs, id) {
		panic(fmt.Sprintf("policy: bad or repeated rule id %q", id))
	}
	ruleIDs = append(ruleIDs, id)
	slices.Sort(ruleIDs)
}

// RuleIDs lists the registered rule ids, sorted.
func RuleIDs() []string { return slices.Clone(ruleIDs) }

// knownRule reports whether id is a registered rule.
func knownRule(id string) bool {
	_, ok := slices.BinarySearch(ruleIDs, id)
	return ok
}
