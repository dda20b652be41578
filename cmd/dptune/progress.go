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
// nothing until the stage closes and then one line — its description, the
// count and the time taken — so that a log holds one line per epoch, not
// one per redraw.
type bar struct {
	w        io.Writer
	pb       *progressbar.ProgressBar // nil when w is not a terminal
	desc     string
	n, total int
	start    time.Time
	closed   bool
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
	}
}

// Close ends the bar's line once, whether or not it reached its total;
// a bar that never moved writes nothing.
func (b *bar) Close() {
	if b.closed {
		return
	}
	b.closed = true
	if b.n == 0 {
		return
	}
	if b.pb != nil {
		fmt.Fprintln(b.w)
		return
	}
	fmt.Fprintf(b.w, "%s  (%d/%d) [%s]\n", b.desc, b.n, b.total, time.Since(b.start).Round(100*time.Millisecond))
}
