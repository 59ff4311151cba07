package policy_test

// The rule ids a policy file may name are registered by internal/detect
// (policy.RegisterRule); linking it in gives this package's tests the real
// rule ids, so they parse policy files (docs/policy.md's example among
// them) against the rules polygraph has.
import _ "github.com/polygraph/polygraph/internal/detect"
