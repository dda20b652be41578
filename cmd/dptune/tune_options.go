package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dptune/dptune/job"
)

// tunerFlags are the registered tuners' own options as flags, by name; a
// name two tuners share is one flag (its first tuner's default and help).
type tunerFlags struct {
	flags map[string]any // *int, *float64, *bool, *string or *time.Duration
	owner map[string]string
}

// addTunerFlags registers the options of the tuners named only (every
// tuner's when none is, job.Tuners) on fl, each help line led by its
// tuner's name: the tuners' options structs are the flags' only
// declaration.
func addTunerFlags(fl *pflag.FlagSet, only ...string) tunerFlags {
	f := tunerFlags{flags: map[string]any{}, owner: map[string]string{}}
	for _, t := range job.Tuners() {
		if len(only) > 0 && !slices.Contains(only, t.Name) {
			continue
		}
		for _, o := range t.Options {
			if _, dup := f.flags[o.Name]; dup {
				continue
			}
			f.flags[o.Name] = addOptionFlag(fl, t.Name, o.Name, o.Default, o.Help)
			f.owner[o.Name] = t.Name
		}
	}
	return f
}

// values returns tuner t's options from the flags, refusing another tuner's
// option that was set. A file option left empty names a file in the
// curator's directory beside out.
func (f tunerFlags) values(cmd *cobra.Command, t job.TunerInfo, out string) (map[string]any, error) {
	mine := map[string]bool{}
	for _, o := range t.Options {
		mine[o.Name] = true
	}
	for name, owner := range f.owner {
		if !mine[name] && cmd.Flags().Changed(name) {
			return nil, usagef("--%s is a --tuner %s option", name, owner)
		}
	}
	v := map[string]any{}
	for _, o := range t.Options {
		v[o.Name] = optionValue(f.flags[o.Name])
		if s, ok := v[o.Name].(string); ok && s == "" && o.CuratorFile != "" {
			v[o.Name] = filepath.Join(filepath.Clean(out)+"-curator", o.CuratorFile)
		}
	}
	return v, nil
}

// addOptionFlag registers a tuner's option on fl as a flag of its default's
// type, its help led by the tuner's name, and returns the flag's pointer.
func addOptionFlag(fl *pflag.FlagSet, tuner, name string, def any, help string) any {
	help = tuner + ": " + help
	switch d := def.(type) {
	case int:
		return fl.Int(name, d, help)
	case float64:
		return fl.Float64(name, d, help)
	case bool:
		return fl.Bool(name, d, help)
	case string:
		return fl.String(name, d, help)
	case time.Duration:
		return fl.Duration(name, d, help)
	}
	panic(fmt.Sprintf("tuner %s: option %s has a default of type %T", tuner, name, def))
}

// optionValue is the value of a flag addOptionFlag registered.
func optionValue(p any) any {
	switch p := p.(type) {
	case *int:
		return *p
	case *float64:
		return *p
	case *bool:
		return *p
	case *string:
		return *p
	case *time.Duration:
		return *p
	}
	return nil
}

// optionValues are the values of the flags addOptionFlag registered, by
// name.
func optionValues(flags map[string]any) map[string]any {
	v := map[string]any{}
	for name, p := range flags {
		v[name] = optionValue(p)
	}
	return v
}

// tunerInfo returns the registered tuner called name.
func tunerInfo(name string) (job.TunerInfo, bool) {
	for _, t := range job.Tuners() {
		if t.Name == name {
			return t, true
		}
	}
	return job.TunerInfo{}, false
}

// tunerHelp lists the registered tuners with their summaries, wrapped, for
// tune's long help.
func tunerHelp() string {
	var b strings.Builder
	for _, t := range job.Tuners() {
		line := fmt.Sprintf("  %-10s ", t.Name)
		for _, w := range strings.Fields(t.Summary) {
			if len([]rune(line))+1+len([]rune(w)) > 77 {
				b.WriteString(strings.TrimRight(line, " ") + "\n")
				line = strings.Repeat(" ", 13)
			}
			line += " " + w
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// tunerExamples are the registered tuners' examples, one line each, for
// tune's help.
func tunerExamples() string {
	var b strings.Builder
	for _, t := range job.Tuners() {
		if t.Example != "" {
			fmt.Fprintf(&b, "  dptune tune --tuner %s %s --out out/%s\n", t.Name, t.Example, t.Name)
		}
	}
	return b.String()
}

// defaultRunsHelp says each tuner's default distribution of the number of
// runs, for --runs-dist's help.
func defaultRunsHelp() string {
	var parts []string
	for _, t := range job.Tuners() {
		if t.Uses.Repetitions {
			parts = append(parts, t.Uses.DefaultRuns+" for "+t.Name)
		}
	}
	return strings.Join(parts, ", ")
}
