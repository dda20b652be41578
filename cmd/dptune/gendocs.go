package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
)

// newGenDocsCmd is the hidden `dptune gen-docs DIR` that `make docs` runs:
// it writes the CLI reference (one Markdown page per command) into DIR.
func newGenDocsCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "gen-docs DIR",
		Short:  "Write the CLI reference (one Markdown page per command) into DIR",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return genDocs(args[0])
		},
	}
}

// genDocs writes the reference of a fresh command tree into dir, replacing
// the pages already there. The pages are the same on every machine: no
// date footer, and a default that names this user's cache or configuration
// directory, or this machine's core count, is written symbolically.
func genDocs(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, err := filepath.Glob(filepath.Join(dir, "dptune*.md"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	root := newRoot()
	machineIndependent(root)
	return doc.GenMarkdownTree(root, dir)
}

// machineIndependent turns off cobra's dated footer on every command and
// rewrites the defaults that depend on the machine or the user.
func machineIndependent(c *cobra.Command) {
	c.DisableAutoGenTag = true
	symbolic := symbolicDefaults()
	for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Name == "concurrency" && f.DefValue == fmt.Sprint(min(64, runtime.GOMAXPROCS(0))) {
				f.DefValue = "min(64, the number of cores)"
				return
			}
			for _, s := range symbolic {
				if s.dir != "" && strings.HasPrefix(f.DefValue, s.dir) {
					f.DefValue = s.name + strings.TrimPrefix(f.DefValue, s.dir)
					return
				}
			}
		})
	}
	for _, sub := range c.Commands() {
		machineIndependent(sub)
	}
}

type symbolicDir struct{ dir, name string }

// symbolicDefaults lists the user's directories that flag defaults are
// built from, with the names the reference gives them (os.UserCacheDir and
// os.UserConfigDir on Linux).
func symbolicDefaults() []symbolicDir {
	var s []symbolicDir
	if d, err := os.UserCacheDir(); err == nil {
		s = append(s, symbolicDir{d, "$XDG_CACHE_HOME"})
	}
	if d, err := os.UserConfigDir(); err == nil {
		s = append(s, symbolicDir{d, "$XDG_CONFIG_HOME"})
	}
	if d, err := os.UserHomeDir(); err == nil {
		s = append(s, symbolicDir{d, "~"})
	}
	return s
}
