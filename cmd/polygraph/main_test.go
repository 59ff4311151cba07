package main

import (
	"os"
	"testing"

	"github.com/polygraph/polygraph/internal/record"
)

// The test binary can act as polygraph itself (POLYGRAPH_TEST_MAIN=1, with
// the verb and flags as its arguments) and as run's shim, so the tests
// below exercise the real command line in a real process.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == record.ShimArg {
		os.Exit(record.ShimMain(os.Args[2:]))
	}
	if os.Getenv("POLYGRAPH_TEST_MAIN") == "1" {
		os.Exit(run())
	}
	os.Exit(m.Run())
}
