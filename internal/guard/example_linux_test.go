package guard_test

import (
	"context"
	"log/slog"
	"net/netip"
	"os"
	"syscall"

	"github.com/polygraph/polygraph/internal/guard"
)

// How `polygraph run --isolate` drives a session: clean up what killed
// sessions left, start the session, start the tree through it, and read
// the evidence when it is done. (main calls guard.MaybeRunHelper first;
// the sensor's shim calls guard.Exec where it would call syscall.Exec.)
func Example() {
	ctx := context.Background()
	if left, err := guard.Cleanup(); err == nil && len(left) > 0 {
		slog.Warn("removed leftovers of killed sessions", "leftovers", left)
	}
	home := "/home/dev"
	s, err := guard.Start(ctx, guard.Options{
		ID:           "20261201T1122-claude",
		Mask:         append(guard.CredentialPaths(home), home+"/.codex", home+"/.gemini"),
		Keep:         []string{home + "/.claude"},
		PIDNamespace: true,
		Egress: &guard.Egress{Allow: []guard.Endpoint{
			{Addr: netip.MustParseAddr("127.0.0.53"), Port: 53},     // the resolver
			{Addr: netip.MustParseAddr("160.79.104.10"), Port: 443}, // api.anthropic.com, resolved now
		}},
	})
	if err != nil {
		slog.Error("isolation unavailable", "err", err)
		return
	}
	defer s.Close()
	cmd, _ := s.Command(ctx, "claude")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1000, Gid: 1000}}
	if err := s.Apply(cmd); err != nil {
		return
	}
	// While the tree runs, the recorder adds each DNS answer it sees for
	// an allowed name: s.Allow(guard.Endpoint{Addr: answer, Port: 443}).
	cmd.Run()
	denied, _ := s.Denials()
	s.Close()
	slog.Info("isolated session ended", "denied", denied, "usage", s.Usage())
}
