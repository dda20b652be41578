package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// bar shows the progress of one stage (an epoch, a feature set, a
// tuning's runs, an audit's trials). On a terminal it is a redrawn
// progress bar; on any other output (a file, a pipe, CI's log) it writes
// one line — its description, the count and the time so far — when the
// stage closes and, for a long phase, at each tenth of the way, so that a
// log holds one line per epoch or per 10% of a phase, not one per redraw.
type bar struct {
	w        io.Writer
	pb       *progressbar.ProgressBar // nil when w is not a terminal
	desc     string
	n, total int
	start    time.Time
	closed   bool
	tenths   bool // off a terminal, also a line at each tenth of the total
	logged   int  // tenths logged so far
}

// newBar starts a bar of total units described by desc on w.
func newBar(w io.Writer, total int, desc string) *bar {
	b := &bar{w: w, desc: desc, total: total, start: time.Now()}
	if isTerminal(w) {
		b.pb = progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(desc),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionSetWidth(25),
			progressbar.OptionThrottle(500*time.Millisecond), progressbar.OptionShowElapsedTimeOnFinish())
	}
	return b
}

// newPhaseBar is newBar for a long phase (the features of a dataset, an
// audit's trials, a tuning's runs): off a terminal it also logs each tenth
// of the way.
func newPhaseBar(w io.Writer, total int, desc string) *bar {
	b := newBar(w, total, desc)
	b.tenths = true
	return b
}

// progressTo returns a progress callback (done of total) drawing a phase
// bar on w: a live bar on a terminal, else one line per tenth.
func progressTo(w io.Writer, desc string) func(done, total int) {
	var b *bar
	return func(done, total int) {
		if b == nil {
			b = newPhaseBar(w, total, desc)
		}
		b.Set(done)
	}
}

// stagedProgressTo is progressTo for work in named stages: each new stage
// closes the previous stage's bar and starts its own.
func stagedProgressTo(w io.Writer) func(stage string, done, total int) {
	var b *bar
	last := ""
	return func(stage string, done, total int) {
		if b == nil || stage != last {
			if b != nil {
				b.Close()
			}
			b, last = newPhaseBar(w, total, stage), stage
		}
		b.Set(done)
	}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Describe replaces the bar's description.
func (b *bar) Describe(desc string) {
	b.desc = desc
	if b.pb != nil {
		b.pb.Describe(desc)
	}
}

// Add advances the bar by k units.
func (b *bar) Add(k int) { b.Set(b.n + k) }

// Set moves the bar to n units done; at the total it closes.
func (b *bar) Set(n int) {
	if b.closed {
		return
	}
	b.n = n
	if b.pb != nil {
		_ = b.pb.Set(n)
	}
	if n >= b.total {
		b.Close()
		return
	}
	if b.pb == nil && b.tenths && b.total > 0 {
		if t := int(int64(n) * 10 / int64(b.total)); t > b.logged {
			b.logged = t
			b.line()
		}
	}
}

// Close ends the bar's line once, whether or not it reached its total;
// a bar that never moved writes nothing.
func (b *bar) Close() {
	if b.closed {
		return
	}
	b.closed = true
	switch {
	case b.n == 0:
	case b.pb != nil:
		fmt.Fprintln(b.w)
	default:
		b.line()
	}
}

// line writes the bar's state as one line.
func (b *bar) line() {
	fmt.Fprintf(b.w, "%s  (%d/%d) [%s]\n", b.desc, b.n, b.total, time.Since(b.start).Round(100*time.Millisecond))
}
