package record

import (
	"log/slog"
	"slices"

	"github.com/polygraph/polygraph/internal/accounts"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/sensor"
)

// markSensitive tells the sensor the policy's guarded files that exist
// now (policy.GuardedPaths), with "~/" read as each of homes: their opens
// go to the security ring.
func markSensitive(s *sensor.Sensor, homes []string) {
	paths := policy.Default().GuardedPaths(homes)
	n := s.MarkSensitive(paths)
	slog.Debug("sensitive files marked for the security ring", "candidates", len(paths), "marked", n)
}

// sessionHomes are the homes a session guards and its rules read "~/"
// as: the one the command runs with first (where sec_files fills up, the
// first homes keep theirs), then every account's (accounts.Homes).
func sessionHomes(home string) []string {
	var homes []string
	if home != "" {
		homes = append(homes, home)
	}
	for _, h := range accounts.Homes(accounts.Passwd) {
		if !slices.Contains(homes, h) {
			homes = append(homes, h)
		}
	}
	return homes
}
