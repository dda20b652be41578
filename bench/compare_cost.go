package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"syscall"
	"time"
)

// clock is a moment of a tuning: the wall clock and, where measured, this
// process's CPU time (user and system) so far.
type clock struct {
	wall  time.Time
	cpu   time.Duration
	cpuOK bool
}

// startClock reads the clock now; withCPU false (runs sent out of this
// process) leaves the CPU time unmeasured.
func startClock(withCPU bool) clock {
	c := clock{wall: time.Now()}
	if withCPU {
		c.cpu, c.cpuOK = processCPU()
	}
	return c
}

// since is the wall seconds from c to now, and the CPU seconds (nil where
// either end is unmeasured).
func (c clock) since() (float64, *float64) {
	return c.until(startClock(c.cpuOK))
}

// until is the wall and CPU seconds from c to d.
func (c clock) until(d clock) (float64, *float64) {
	wall := d.wall.Sub(c.wall).Seconds()
	if !c.cpuOK || !d.cpuOK {
		return wall, nil
	}
	cpu := (d.cpu - c.cpu).Seconds()
	return wall, &cpu
}

// measured is a phase's wall and CPU seconds as a row keeps them.
func measured(wall float64, cpu *float64) (*float64, *float64) {
	return &wall, cpu
}

// processCPU is this process's user and system CPU time so far, false
// where getrusage fails.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

// costMean is a mean over the tunings that measured a quantity.
type costMean struct {
	sum float64
	n   int
}

func (m *costMean) add(x *float64) {
	if x != nil {
		m.sum += *x
		m.n++
	}
}

// cell is the mean, "–" where no tuning measured it, and how many did
// when not all of tunings.
func (m costMean) cell(tunings int) string {
	if m.n == 0 {
		return "–"
	}
	mean := m.sum / float64(m.n)
	s := fmt.Sprintf("%.0f", mean)
	if mean < 10 {
		s = fmt.Sprintf("%.1f", mean)
	}
	if m.n < tunings {
		s += fmt.Sprintf(" (%d of %d)", m.n, tunings)
	}
	return s
}

// costLine is one line of a cost table: an entry, or one phase of a
// partitioned tuner's tunings, with means over its tunings.
type costLine struct {
	label        string
	tunings      int
	wall, cpu    costMean
	ratio        costMean // CPU over wall seconds of the tunings that measured both
	runs, epochs float64
}

func (l *costLine) add(wall, cpu *float64) {
	l.wall.add(wall)
	l.cpu.add(cpu)
	if wall != nil && cpu != nil && *wall > 0 {
		r := *cpu / *wall
		l.ratio.add(&r)
	}
}

// costLines are rep's cost lines: the baselines (the two not-private rows
// share one set of runs, listed once), then each tuner, a partitioned one
// followed by its part runs and its final run. Wall and CPU times leave
// out a partitioned tuning whose part scores came from an earlier budget
// (PartsReused), except for its final run.
func costLines(rep *CompareReport) []costLine {
	s := rep.Settings
	var entries []CompareEntry
	if s.Default != nil {
		entries = []CompareEntry{{Tuner: BaselineDefault}, {Tuner: BaselineSelection}}
	}
	entries = append(entries, s.Entries...)
	var out []costLine
	for _, e := range entries {
		var rows []CompareRow
		for _, r := range rep.Rows {
			if r.Tuner == e.Tuner && r.Variant == e.Variant {
				rows = append(rows, r)
			}
		}
		if len(rows) == 0 {
			continue
		}
		label := s.entryLabel(e)
		if e.Tuner == BaselineSelection {
			label = "every candidate once: non-private selection and oracle (*not private*)"
		}
		n := float64(len(rows))
		all := costLine{label: label, tunings: len(rows)}
		parts := costLine{label: e.Name() + ": part runs", tunings: len(rows)}
		final := costLine{label: e.Name() + ": final run", tunings: len(rows)}
		phased := false
		for _, r := range rows {
			if !r.PartsReused {
				wall := r.Seconds
				all.add(&wall, r.CPUSeconds)
				parts.add(r.PartSeconds, r.PartCPUSeconds)
			}
			final.add(r.FinalSeconds, r.FinalCPUSeconds)
			pr, pe, fe, ok := s.partitionedPhases(r)
			if !ok {
				all.runs += float64(r.Runs) / n
				all.epochs += r.TrainingEpochs / n
				continue
			}
			phased = true
			parts.runs += float64(pr) / n
			parts.epochs += pe / n
			final.runs += 1 / n
			final.epochs += fe / n
			all.runs += float64(pr+1) / n
			all.epochs += (pe + fe) / n
		}
		out = append(out, all)
		if phased {
			out = append(out, parts, final)
		}
	}
	return out
}

// writeCostTable writes what one tuning of each entry of rep costs, over
// every budget and seed: wall and CPU seconds, DP-SGD runs and passes
// over the training set, a partitioned tuner's part runs and final run
// apart; "–" where no tuning measured a time (tunings reused from the
// cache of a dptune that did not record it).
func writeCostTable(w io.Writer, rep *CompareReport) {
	lines := costLines(rep)
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "What one tuning costs, mean over every budget and seed (%d CPUs): wall seconds, CPU seconds of the process over them (user + system; up to %d × the wall seconds when every core works), DP-SGD runs and epochs (passes over the whole training set, every run together). Curator-side: they reveal K.\n\n", rep.CPUs, max(rep.CPUs, 1))
	fmt.Fprintln(w, "| tuner | tunings | wall s | CPU s | CPU / wall | runs | training epochs |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	unmeasured := false
	for _, l := range lines {
		ratio := "–"
		if l.ratio.n > 0 {
			ratio = fmt.Sprintf("%.2f", l.ratio.sum/float64(l.ratio.n))
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %.1f | %.1f |\n", l.label, l.tunings, l.wall.cell(l.tunings), l.cpu.cell(l.tunings), ratio, l.runs, l.epochs)
		unmeasured = unmeasured || l.cpu.n < l.tunings || l.wall.n < l.tunings
	}
	reused := slices.ContainsFunc(rep.Rows, func(r CompareRow) bool { return r.PartsReused })
	var notes []string
	if unmeasured {
		notes = append(notes, "\"–\" is a time no tuning of the line measured, and \"(n of m)\" a mean over the n that did: the others were reused from the cache of an earlier `bench compare`, which did not yet record CPU seconds or a doubling tuning's part runs and final run apart")
	}
	if reused {
		notes = append(notes, "a doubling tuning whose part scores were reused from an earlier budget of the same seed counts in its final run's times only")
	}
	if rep.Cached > 0 {
		notes = append(notes, fmt.Sprintf("%d of this output's tunings came from the cache; their times are those of the sitting that ran them", rep.Cached))
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "\n%s.\n", capitalise(strings.Join(notes, "; ")))
	}
}

// capitalise upper-cases s's first letter (ASCII).
func capitalise(s string) string {
	if s != "" && s[0] >= 'a' && s[0] <= 'z' {
		return string(s[0]-'a'+'A') + s[1:]
	}
	return s
}

// costSittingTitle is the heading of a cost sitting's section.
const costSittingTitle = "What each tuner costs (one sitting)"

// costSection is the report's section of a comparison run to time the
// tuners (CompareReport.CostSitting): the machine it recorded, and the
// cost table.
func costSection(w io.Writer, r *CompareReport) {
	s := r.Settings
	load := "not recorded"
	if len(r.LoadAvg) > 0 {
		load = strings.Join(r.LoadAvg, " at the start, ") + " at the end"
		if len(r.LoadAvg) == 1 {
			load = r.LoadAvg[0] + " at the start"
		}
	}
	cache := "every tuning ran, one after another, in this sitting (none came from a cache)"
	if r.Cached > 0 {
		cache = fmt.Sprintf("its tunings ran one after another in this sitting, except %d that came from a cache", r.Cached)
	}
	fmt.Fprintf(w, "## %s\n\nOne comparison on %s (%s, n = %d; %d candidates of %s) at total ε = %s, δ = %g, seed(s) %s, run to time the tuners: %s, with nothing else meant to run on the machine. "+
		"%d CPUs; load average (1, 5, 15 min) %s; wall time %.0f s; finished %s. Command: `%s`.\n\n",
		costSittingTitle, s.Dataset, s.Model, s.NominalSize, s.Candidates, s.Space, joinF(s.Budgets), s.Delta, joinSeeds(s.Seeds), cache, r.CPUs, load, r.Wall, r.Finished, r.Command)
	writeCostTable(w, r)
	fmt.Fprintf(w, "\nA doubling tuning's part runs are timed from its start (loading the data included) to the end of its last part run; its final run is the rest (the search, the final DP-SGD run and its test). The accuracies of a sitting's %d seed(s) judge nothing: the comparisons above do.\n\n", len(s.Seeds))
}

func joinSeeds(seeds []uint64) string {
	s := make([]string, len(seeds))
	for i, x := range seeds {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}
