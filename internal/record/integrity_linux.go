package record

import (
	"context"
	"os"

	"github.com/polygraph/polygraph/internal/integrity"
	"github.com/polygraph/polygraph/internal/manifest"
	"github.com/polygraph/polygraph/internal/sensor"
)

// Integrity checking (docs/integrity.md): every exec of the traced tree is
// handed to an integrity.SessionCheck as it is decoded; it hashes and
// judges the binary (and the script an interpreter runs) off the event
// path and stores the verdicts in the session beside the events. Watch
// mode checks its agents' trees through the same type.

// startExecCheck starts checking the execs of the session w records; nil
// (which does nothing) when checking is off.
func startExecCheck(ctx context.Context, o Options, meta manifest.Meta, w integrity.VerdictSink) *integrity.SessionCheck {
	if o.NoIntegrity {
		return nil
	}
	return integrity.StartSession(ctx, o.Home, integrity.Options{Workspaces: []string{meta.Cwd}, PATH: tracedPATH(o), Session: meta.ID}, w)
}

// tracedPATH is the PATH the traced command resolves programs with: the
// one run gives it, or the attached process's own.
func tracedPATH(o Options) string {
	if o.Mode != "attach" {
		return envValue(o.Env, "PATH")
	}
	if v, ok := sensor.ProcEnv(uint32(o.AttachPID), "PATH"); ok {
		return v
	}
	return os.Getenv("PATH")
}
