package redact

import (
	"slices"

	"github.com/polygraph/polygraph/internal/event"
)

// Event returns e with the secrets of its command line and recorded
// environment masked (Argv, Env): e itself when nothing changed, else a
// copy, so the session's events keep what was recorded. Every reader that
// shows or sends events (`events`, the report's unattributed activity,
// the pages) passes them through it.
func Event(e *event.Event) *event.Event {
	if e == nil || e.Process == nil || len(e.Process.Argv) == 0 && len(e.Process.Env) == 0 {
		return e
	}
	p := e.Process
	argv, env := Argv(p.Argv), Env(p.Env)
	if slices.Equal(argv, p.Argv) && slices.Equal(env, p.Env) {
		return e
	}
	c, q := *e, *p
	q.Argv, q.Env = argv, env
	c.Process = &q
	return &c
}
