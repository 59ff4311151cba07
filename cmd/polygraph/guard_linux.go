package main

import "github.com/polygraph/polygraph/internal/guard"

// The isolation helper (`polygraph __polygraph_guard CMD...`) runs before
// anything else, as guard.MaybeRunHelper asks.
func init() { guard.MaybeRunHelper() }
