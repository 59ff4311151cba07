package sensor

// Feature is one thing polygraph asks of the kernel, as found at run time
// (Probe): whether this kernel has it, and what polygraph does without it.
type Feature struct {
	// Name says what it is, as a person reads it ("ring buffer").
	Name string `json:"name"`
	// State is FeatureOK, FeatureMissing or FeatureUnknown.
	State string `json:"state"`
	// Needed says what polygraph uses it for and, when missing, what that
	// costs.
	Needed string `json:"needed"`
	// Required features stop recording when missing; the others cost what
	// Needed says.
	Required bool `json:"required"`
}

// The states of a Feature.
const (
	FeatureOK      = "ok"
	FeatureMissing = "missing"
	// FeatureUnknown: the probe could not decide, most often because it
	// loads a trial program and this process may not (not root).
	FeatureUnknown = "unknown"
)

// Probe reports what this kernel allows the sensor, without loading it:
// BTF, the program and map types, the helpers the programs call, and the
// optional hooks New drops where the kernel lacks them (the same test:
// missingHooks), each with what it costs. The trial loads need root
// (CAP_BPF); without it those features are FeatureUnknown.
func Probe() []Feature { return probe() }
