package sensor

import (
	"slices"
	"testing"

	"github.com/polygraph/polygraph/internal/testenv"
)

// TestProbeAgreesWithNew: on a kernel the sensor loads on, Probe finds
// every required feature, and the optional hooks it calls missing are
// exactly those the loaded sensor names as unavailable.
func TestProbeAgreesWithNew(t *testing.T) {
	testenv.RequireRoot(t)
	s, err := New(Options{})
	testenv.Feature(t, "BPF sensor", err)
	defer s.Close()
	var missing []string
	for _, f := range Probe() {
		switch {
		case f.Required && f.State != FeatureOK:
			t.Errorf("the sensor loaded, but Probe says %s is %s: %s", f.Name, f.State, f.Needed)
		case !f.Required && f.State == FeatureUnknown:
			t.Errorf("as root, Probe could not decide %s: %s", f.Name, f.Needed)
		case f.Name == "optional hook":
			missing = append(missing, f.Needed)
		}
	}
	un := slices.Clone(s.Unavailable())
	slices.Sort(un)
	slices.Sort(missing)
	if !slices.Equal(un, missing) {
		t.Errorf("Probe's missing hooks %q, the sensor's unavailable %q", missing, un)
	}
}
