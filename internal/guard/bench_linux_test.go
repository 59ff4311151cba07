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
	o := Options{
		Mask:   CredentialPaths(home),
		Egress: &Egress{},
	}
	for _, p := range o.Mask {
		os.MkdirAll(p, 0o755)
	}
	for i := 0; b.Loop(); i++ {
		o.ID = fmt.Sprintf("bench-%d-%d", os.Getpid(), i)
		s, err := Start(context.Background(), o)
		if err != nil {
			b.Fatal(err)
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
		if err != nil {
			b.Fatal(err)
		}
	}
}
