package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/dptune/dptune/job"
)

// addTunerFlags registers the options of the tuners named only (every
// tuner's when none is, job.Tuners) on fl, each help line led by its
// tuner's name, and returns the flags' pointers by name: the tuners'
// options structs are the flags' only declaration. A name two tuners share
// is one flag (its first tuner's default and help).
func addTunerFlags(fl *pflag.FlagSet, only ...string) map[string]any {
	flags := map[string]any{}
	for _, t := range job.Tuners() {
		if len(only) > 0 && !slices.Contains(only, t.Name) {
			continue
		}
		for _, o := range t.Options {
			if _, dup := flags[o.Name]; !dup {
				flags[o.Name] = addOptionFlag(fl, t.Name, o.Name, o.Default, o.Help)
			}
		}
	}
	return flags
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
