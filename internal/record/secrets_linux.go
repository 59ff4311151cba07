package record

import (
	"os"
	"path/filepath"
	"syscall"

	"github.com/polygraph/polygraph/internal/manifest"
	"github.com/polygraph/polygraph/internal/policy"
)

// Bounds of a session's secrets by identity: the files of one guarded
// directory, and all of them (a home with thousands of keys in ~/.ssh
// keeps the first ones; the rules still match the rest by name).
const (
	maxSecretsPerDir = 256
	maxSecrets       = 4096
)

// Secrets returns the credential files of homes that exist now, by
// identity, under the built-in policy (what NewMeta records).
func Secrets(homes []string) []manifest.Secret { return secretIdentities(policy.Default(), homes) }

// secretIdentities returns the credential files of homes that exist now
// (the policy's secret paths, and the regular files directly in those
// that are directories) by identity.
func secretIdentities(pol *policy.Policy, homes []string) []manifest.Secret {
	var out []manifest.Secret
	seen := map[[2]uint64]bool{}
	add := func(p string, st *syscall.Stat_t) {
		k := [2]uint64{uint64(st.Dev), st.Ino}
		if seen[k] || len(out) >= maxSecrets {
			return
		}
		seen[k] = true
		out = append(out, manifest.Secret{Path: p, Dev: uint64(st.Dev), Ino: st.Ino})
	}
	for _, p := range pol.SecretPaths(homes) {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			continue
		}
		if !fi.IsDir() {
			if fi.Mode().IsRegular() {
				add(p, st)
			}
			continue
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			continue
		}
		for n, e := range ents {
			if n >= maxSecretsPerDir {
				break
			}
			if !e.Type().IsRegular() {
				continue
			}
			f := filepath.Join(p, e.Name())
			if fi, err := os.Lstat(f); err == nil {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok {
					add(f, st)
				}
			}
		}
	}
	return out
}
