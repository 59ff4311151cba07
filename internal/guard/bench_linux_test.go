package guard

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/polygraph/polygraph/internal/testenv"
)

// The cost of isolation is what Start, the masked start of the tree and
// Close add to running a command through the same re-executed helper:
// compare BenchmarkHelperPlain with the others.
func BenchmarkHelperPlain(b *testing.B) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := exec.Command(self, HelperArg, "true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkIsolatedSession(b *testing.B) {
	testenv.RequireRoot(b)
	home := b.TempDir()
	for _, p := range CredentialPaths(home) {
		os.MkdirAll(p, 0o755)
	}
	for _, bc := range []struct {
		name string
		o    Options
	}{
		{"cgroup", Options{}},
		{"masks", Options{Mask: CredentialPaths(home)}},
		{"masks+egress", Options{Mask: CredentialPaths(home), Egress: &Egress{}}},
		{"masks+egress+pidns", Options{Mask: CredentialPaths(home), Egress: &Egress{}, PIDNamespace: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				bc.o.ID = fmt.Sprintf("bench-%d-%d", os.Getpid(), i)
				if err := isolatedTrue(bc.o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// isolatedTrue is one whole isolated session around /bin/true.
func isolatedTrue(o Options) error {
	s, err := Start(context.Background(), o)
	if err != nil {
		return err
	}
	cmd, err := s.Command(context.Background(), "true")
	if err == nil {
		err = s.Apply(cmd)
	}
	if err == nil {
		err = cmd.Run()
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return err
}
