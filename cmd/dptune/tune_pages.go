package main

import (
	"fmt"
	"io"

	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/job/tuningpage"
)

// tuningPages draws the tuning just saved into f.Out in pictures
// (tuningpage.Write): f.Out/tuning.html from its report.json and the
// public space, and with --diagnostics the NOT PRIVATE page of every run
// in OUT-curator. Call it right after the release is saved, with Save's
// error: a release that could not be saved gets no page, and a failed
// job's directory none either (an earlier page follows its report into
// previous/). The privacy is spent whatever becomes of the pages, so one
// that cannot be written is a note on w, not an error.
func tuningPages(w io.Writer, f tuneFlags, spec job.TuneSpec, saveErr error, diag *job.NotPrivateDiagnostics) {
	if saveErr != nil {
		return
	}
	p := tuningpage.Pages{Release: f.Out, Space: spec.Space}
	if f.Diagnostics != "" {
		p.Diagnostics = diag
	}
	written, err := tuningpage.Write(p)
	if err != nil {
		fmt.Fprintf(w, "note: the tuning's pages were not written: %v\n", err)
		return
	}
	if written.Release != "" {
		fmt.Fprintf(w, "pictures       %s (what report.json releases)\n", written.Release)
	}
	if written.Curator != "" {
		fmt.Fprintf(w, "               %s (NOT PRIVATE: every run, for the curator only)\n", written.Curator)
	}
}
