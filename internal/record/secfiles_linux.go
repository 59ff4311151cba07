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
// as: every account's (accounts.Homes) and the one the command runs with.
func sessionHomes(home string) []string {
	homes := accounts.Homes(accounts.Passwd)
	if home != "" && !slices.Contains(homes, home) {
		homes = append(homes, home)
	}
	return homes
}
