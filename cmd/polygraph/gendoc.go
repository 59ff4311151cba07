//go:build gendoc

package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// The package's man pages and shell completions are generated from the
// commands themselves, so they never disagree with --help:
//
//	go run -tags gendoc ./cmd/polygraph __gendoc DIR
//
// writes DIR/man1/polygraph*.1 and DIR/completions/{polygraph.bash,
// _polygraph, polygraph.fish}. Built only with the gendoc tag, so the
// release binary carries neither cobra/doc nor its man-page renderer.
func init() {
	commands = append(commands, func(*globalOptions) *cobra.Command {
		return &cobra.Command{
			Use:    "__gendoc DIR",
			Hidden: true,
			Args:   cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return genDocs(cmd.Root(), args[0])
			},
		}
	})
}

func genDocs(root *cobra.Command, dir string) error {
	man := filepath.Join(dir, "man1")
	comp := filepath.Join(dir, "completions")
	for _, d := range []string{man, comp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	root.DisableAutoGenTag = true // the pages of one commit are the same whenever built
	hdr := &doc.GenManHeader{Title: "POLYGRAPH", Section: "1", Source: "polygraph", Manual: "polygraph manual"}
	if err := doc.GenManTree(root, hdr, man); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	for name, gen := range map[string]func(string) error{
		"polygraph.bash": func(p string) error { return root.GenBashCompletionFileV2(p, true) },
		"_polygraph":     root.GenZshCompletionFile,
		"polygraph.fish": func(p string) error { return root.GenFishCompletionFile(p, true) },
	} {
		if err := gen(filepath.Join(comp, name)); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}
