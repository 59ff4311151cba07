package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/polygraph/polygraph/internal/sensor"
	"github.com/polygraph/polygraph/internal/version"
)

// versionOptions are the flags of `polygraph version`.
type versionOptions struct {
	json bool
}

func init() { commands = append(commands, newVersionCommand) }

func newVersionCommand(g *globalOptions) *cobra.Command {
	opts := &versionOptions{}
	cmd := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print polygraph's version and the kernel features it found",
		Long: `Print the version, commit and build date polygraph was built with, its Go,
and the kernel features it depends on as found now, on this machine: BTF,
the BTF tracepoints, the ring buffer, bpf_loop, the cgroup hooks of
run --isolate, and the optional hooks. A missing feature is named with what
it costs. Probing the program and map types loads trial programs, which
needs root: without it those say "unknown". 'polygraph --version' prints
the same.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVersion(cmd.Context(), opts, cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "one JSON document")
	return cmd
}

// versionDoc is what `version --json` prints.
type versionDoc struct {
	version.Info
	OS     string `json:"os"`
	Arch   string `json:"arch"`
	Kernel string `json:"kernel,omitempty"`
	// Hooks says which hooks the sensor runs on here and what the faster
	// ones (fentry, BPF LSM) answered (sensor.HookReport).
	Hooks    string           `json:"hooks,omitempty"`
	Features []sensor.Feature `json:"features"`
}

func runVersion(ctx context.Context, opts *versionOptions, stdout io.Writer) error {
	doc := currentVersion()
	if opts.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	_, err := io.WriteString(stdout, versionText(doc))
	return err
}

// currentVersion describes this build on this machine, probing the kernel.
func currentVersion() versionDoc {
	return versionDoc{Info: version.Get(), OS: runtime.GOOS, Arch: runtime.GOARCH, Kernel: kernelRelease(), Hooks: hookLine(), Features: sensor.Probe()}
}

// versionText renders doc for a person: the build, then each feature
// with its state, what is missing last with its cost.
func versionText(doc versionDoc) string {
	var b strings.Builder
	fmt.Fprintf(&b, "polygraph %s\n", doc.Version)
	commit := doc.Commit
	if commit == "" {
		commit = "unknown"
	}
	if doc.Modified {
		commit += " (modified)"
	}
	date := doc.Date
	if date == "" {
		date = "unknown"
	}
	fmt.Fprintf(&b, "  commit  %s\n  built   %s\n  go      %s %s/%s\n", commit, date, doc.Go, doc.OS, doc.Arch)
	if doc.Kernel != "" {
		fmt.Fprintf(&b, "  kernel  %s\n", doc.Kernel)
	}
	if doc.Hooks != "" {
		fmt.Fprintf(&b, "  hooks   %s\n", doc.Hooks)
	}
	b.WriteString("kernel features:\n")
	var missing []sensor.Feature
	for _, f := range doc.Features {
		if f.State == sensor.FeatureMissing {
			missing = append(missing, f)
			continue
		}
		fmt.Fprintf(&b, "  %-8s %s", f.State, f.Name)
		if f.State == sensor.FeatureUnknown {
			fmt.Fprintf(&b, ": %s", f.Needed)
		}
		b.WriteByte('\n')
	}
	for _, f := range missing {
		fmt.Fprintf(&b, "  %-8s %s: %s\n", f.State, f.Name, f.Needed)
	}
	if len(missing) == 0 {
		b.WriteString("nothing missing\n")
	}
	return b.String()
}

// kernelRelease is the running kernel's release, "" off Linux.
func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// setVersionFlag makes `polygraph --version` print what `polygraph
// version` does (cobra's flag, with the text rendered when asked: the
// probe loads trial programs, which no other verb should pay for).
func setVersionFlag(root *cobra.Command) {
	root.Version = version.Get().Version
	cobra.AddTemplateFunc("polygraphVersion", func() string {
		return versionText(currentVersion())
	})
	root.SetVersionTemplate("{{polygraphVersion}}")
}
