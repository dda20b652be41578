package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

// cpuProfile is the file of --cpuprofile while a command runs, else nil.
var cpuProfile *os.File

// addProfileFlag gives root a persistent --cpuprofile FILE: a Go CPU
// profile of the whole command (`go tool pprof bin/dptune FILE`), to find
// where a benchmark's time goes. An unwritable file is refused (exit 2)
// before any work.
func addProfileFlag(root *cobra.Command) {
	var path string
	root.PersistentFlags().StringVar(&path, "cpuprofile", "", "write a Go CPU profile of the command to this file (read it with go tool pprof)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if path == "" {
			return nil
		}
		f, err := os.Create(path)
		if err != nil {
			return usagef("--cpuprofile: %v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return usagef("--cpuprofile: %v", err)
		}
		cpuProfile = f
		return nil
	}
}

// stopProfile ends the CPU profile, if one runs, whatever the command's
// outcome; a failed write is reported, the command's status kept.
func stopProfile() {
	if cpuProfile == nil {
		return
	}
	pprof.StopCPUProfile()
	if err := cpuProfile.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "dptune: --cpuprofile: %v\n", err)
	}
	cpuProfile = nil
}
