package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/record"
)

// isolateFlags are run's enforcement flags (docs/enforcement.md).
type isolateFlags struct {
	isolate     bool
	limitMemory string
	limitPids   int64
}

func addIsolateFlags(cmd *cobra.Command, f *isolateFlags) {
	cmd.Flags().BoolVar(&f.isolate, "isolate", false, "hide credential stores from CMD, confine its egress to the policy's allowlist, stop it reaching processes outside it over Unix sockets and FIFOs (but the policy's unix_peers), refuse it io_uring, and enforce the policy's kill rules and exec gate (docs/enforcement.md)")
	cmd.Flags().StringVar(&f.limitMemory, "limit-memory", "", "with --isolate: memory limit of the tree (bytes, or with K, M, G)")
	cmd.Flags().Int64Var(&f.limitPids, "limit-pids", 0, "with --isolate: most processes and threads the tree may have at once")
}

// isolation returns what Record isolates with, nil without --isolate.
func (f *isolateFlags) isolation(pol *policy.Policy) (*record.Isolation, error) {
	if !f.isolate {
		if f.limitMemory != "" || f.limitPids != 0 {
			return nil, &usageError{fmt.Errorf("--limit-memory and --limit-pids need --isolate")}
		}
		return nil, nil
	}
	mem, err := parseBytes(f.limitMemory)
	if err != nil {
		return nil, &usageError{fmt.Errorf("--limit-memory: %w", err)}
	}
	if f.limitPids < 0 {
		return nil, &usageError{fmt.Errorf("--limit-pids: want a positive number")}
	}
	return &record.Isolation{Policy: pol, MemoryMax: mem, PidsMax: f.limitPids}, nil
}

// parseBytes reads 512M, 2G, 1048576; "" is 0 (no limit).
func parseBytes(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	mult := int64(1)
	switch strings.ToUpper(s[len(s)-1:]) {
	case "K":
		mult = 1 << 10
	case "M":
		mult = 1 << 20
	case "G":
		mult = 1 << 30
	}
	if mult != 1 {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("want a positive size such as 512M, got %q", s)
	}
	return n * mult, nil
}
