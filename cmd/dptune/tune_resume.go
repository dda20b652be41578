package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dptune/dptune/job"
)

// addResumeFlag adds tune's --resume.
func addResumeFlag(fl *pflag.FlagSet, resume *string) {
	fl.StringVar(resume, "resume", "", "continue the unfinished tuning whose --out was DIR (killed, even with SIGKILL, or interrupted; on the local runner) with the settings, key and finished runs it kept in DIR-curator/tuning, ending as it would have; takes no other flag (a --runner temporal tuning resumes when its command is run again)")
}

// diagnosticsNote is the caller note that keeps --diagnostics' file for a
// resume.
const diagnosticsNote = "diagnostics"

// specOrResume is f.spec, made resumable (job.TuneSpec.Checkpoint in
// OUT-curator/tuning), or with --resume OUT the spec of the unfinished
// tuning OUT keeps (job.ResumeTuneSpec), with f set as the first run's
// flags were for what runTune prints and writes. --resume takes no other
// flag: a resume is refused, before any work, for another flag, and by
// the job for an OUT with no unfinished tuning, files that do not
// authenticate, another build or other data.
func (f *tuneFlags) specOrResume(cmd *cobra.Command) (job.TuneSpec, error) {
	if f.resume == "" {
		spec, err := f.spec(cmd)
		if err != nil {
			return spec, err
		}
		spec.Checkpoint = job.TuneCheckpointPath(f.out)
		if f.diagnostics != "" {
			abs, err := filepath.Abs(f.diagnostics)
			if err != nil {
				return spec, fmt.Errorf("--diagnostics: %w", err)
			}
			spec.CallerNotes = map[string]string{diagnosticsNote: abs}
		}
		return spec, nil
	}
	var other string
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if fl.Name != "resume" && other == "" {
			other = fl.Name
		}
	})
	if other != "" {
		return job.TuneSpec{}, usagef("--resume takes no other flag: the tuning continues with the settings it kept (drop --%s)", other)
	}
	spec, err := job.ResumeTuneSpec(f.resume)
	if err != nil {
		return spec, err
	}
	f.out = f.resume
	if err := job.CheckOut(f.out); err != nil {
		return spec, fmt.Errorf("--resume: %w", err)
	}
	f.tuner, f.data.dataset, f.data.budget, f.epsilon, f.delta = spec.Tuner, spec.Data.Name, spec.Budget, spec.Epsilon, spec.Delta
	f.diagnostics = spec.CallerNotes[diagnosticsNote]
	fmt.Fprintf(cmd.ErrOrStderr(), "resuming the tuning in %s: its finished runs are given back from %s, the others run as they would have\n", f.out, spec.Checkpoint)
	return spec, nil
}
