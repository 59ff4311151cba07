// Package version says which polygraph this is: the release version and
// commit the build was stamped with (make sets them with -ldflags -X), or
// what the Go toolchain recorded of the source tree (its VCS revision)
// when it was not stamped.
package version

import (
	"runtime"
	"runtime/debug"
)

// Set at link time: -X github.com/polygraph/polygraph/internal/version.Version=v0.3.0 (and Commit, Date).
var (
	Version = ""
	Commit  = ""
	Date    = ""
)

// Info is what a build says of itself.
type Info struct {
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
	Date    string `json:"date,omitempty"`
	Go      string `json:"go"`
	// Modified: built from a tree with uncommitted changes.
	Modified bool `json:"modified,omitempty"`
}

// Get returns this build's Info.
func Get() Info {
	i := Info{Version: Version, Commit: Commit, Date: Date, Go: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if i.Commit == "" {
					i.Commit = s.Value
				}
			case "vcs.time":
				if i.Date == "" {
					i.Date = s.Value
				}
			case "vcs.modified":
				i.Modified = s.Value == "true"
			}
		}
		if i.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			i.Version = bi.Main.Version
		}
	}
	if i.Version == "" {
		i.Version = "dev"
	}
	return i
}

// String is the one-line form: "v0.3.0 (abc1234)" or "dev (abc1234, modified)".
func (i Info) String() string {
	s := i.Version
	c := i.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	switch {
	case c != "" && i.Modified:
		s += " (" + c + ", modified)"
	case c != "":
		s += " (" + c + ")"
	}
	return s
}
