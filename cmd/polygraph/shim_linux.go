package main

import "github.com/polygraph/polygraph/internal/sensor"

// The shim is polygraph re-executed as the traced command's first process
// (see sensor.ShimMain).
const shimArg = sensor.ShimArg

func shimMain(args []string) int { return sensor.ShimMain(args) }
