//go:build !linux

package record

import "errors"

// errNoShim: the shim's guards need Linux, as recording does.
var errNoShim = errors.New("polygraph's helper processes need Linux")

// dropCaps cannot drop Linux capabilities elsewhere; the shim never runs
// there, since Record does not.
func dropCaps() error { return errNoShim }

// watchdogMain has no tree to watch off Linux.
func watchdogMain() int { return 1 }
