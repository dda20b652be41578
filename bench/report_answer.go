package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/dptune/dptune/tuning"
)

// answerReports are the comparisons among all that answer the report's
// question: those that ran the baselines, a cost sitting left out (it
// times the tuners on one seed).
func answerReports(all []found) ([]CompareReport, error) {
	var reps []CompareReport
	for _, f := range all {
		if f.kind != "compare.json" {
			continue
		}
		var r CompareReport
		if err := json.Unmarshal(f.raw, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", f.path, err)
		}
		if r.Settings.Default != nil && !r.CostSitting {
			reps = append(reps, r)
		}
	}
	return reps, nil
}

// costSittings are the cost sittings among all (CompareReport.CostSitting).
func costSittings(all []found) []CompareReport {
	var out []CompareReport
	for _, f := range all {
		var r CompareReport
		if f.kind == "compare.json" && json.Unmarshal(f.raw, &r) == nil && r.CostSitting {
			out = append(out, r)
		}
	}
	return out
}

// answerRow is one row of the answer table: a comparison's dataset and
// budget, its default, its best private tuner (by mean test accuracy; nil
// when none ran) with the paired difference to the default and the
// verdict, and the two not-private references.
type answerRow struct {
	dataset       string
	options       string // the comparison's options (CompareSettings.Options), "" for none
	eps           float64
	def, sel, ora CompareCell
	best          *CompareCell
	diff, verdict string // "–" without a paired difference
	// rec is the recommended tuner's cell (nil when it did not run), with
	// its paired difference to the default; best is among the others.
	rec     *CompareCell
	recDiff string
}

// answerRows are the answer table's rows: every budget of every report
// where the default ran.
func answerRows(reps []CompareReport) []answerRow {
	var rows []answerRow
	for _, r := range reps {
		name := r.Settings.Dataset
		if r.Settings.Dataset == "cifar10" {
			name += " (JPEG-derived, not comparable)"
		}
		for _, eps := range sortedBudgets(r.Cells) {
			def, ok := r.cell(BaselineDefault, "", eps)
			if !ok {
				continue
			}
			row := answerRow{dataset: name, options: r.Settings.Options(), eps: eps, def: def, diff: "–", verdict: "–", recDiff: "–"}
			for _, c := range r.Cells {
				if e := (CompareEntry{Tuner: c.Tuner, Variant: c.Variant}); e.IsBaseline() || c.Budget != eps {
					continue
				}
				if c.Tuner == tuning.RecommendedName {
					row.rec = &c
					if mean, half, n := r.paired(CompareEntry{Tuner: c.Tuner}, CompareEntry{Tuner: BaselineDefault}, eps); n > 0 {
						row.recDiff = signedWithCI(mean, half, n)
					}
					continue
				}
				if row.best == nil || c.Accuracy > row.best.Accuracy {
					row.best = &c
				}
			}
			row.sel, _ = r.cell(BaselineSelection, "", eps)
			row.ora, _ = r.cell(BaselineOracle, "", eps)
			if row.best != nil {
				mean, half, n := r.paired(CompareEntry{Tuner: row.best.Tuner, Variant: row.best.Variant}, CompareEntry{Tuner: BaselineDefault}, eps)
				if n > 0 {
					row.diff, row.verdict = signedWithCI(mean, half, n), verdict(mean, half, n)
				}
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// writeAbstract opens the report: its question, the data it answers from
// (datasets, seeds, budgets), the answer counted over the answer table's
// cells, what the papers' verdicts came to, and where the costs are.
func writeAbstract(out io.Writer, reps []CompareReport, rows []answerRow, vs []Verdict, costs []CompareReport) {
	w := &strings.Builder{}
	defer func() { fmt.Fprintf(out, "%s\n\n", strings.TrimSpace(w.String())) }()
	fmt.Fprint(w, "**Abstract.** dptune tunes DP-SGD's hyperparameters privately, so that one (ε, δ) covers every tuning run and the released model. ")
	if len(rows) == 0 {
		fmt.Fprint(w, "No comparison among this report's inputs ran the default baseline (one private run of published settings at the whole budget), so the report cannot yet say whether private tuning pays. ")
	} else {
		var data []string
		var budgets []float64
		for _, r := range reps {
			d := fmt.Sprintf("%s (%d seeds)", r.Settings.Dataset, len(r.Settings.Seeds))
			if r.Settings.Dataset == "cifar10" {
				d = fmt.Sprintf("cifar10 (a JPEG-derived copy, %d seeds)", len(r.Settings.Seeds))
			}
			if o := r.Settings.Options(); o != "" {
				d += " with " + o
			}
			data = append(data, d)
			for _, c := range r.Cells {
				if !slices.Contains(budgets, c.Budget) {
					budgets = append(budgets, c.Budget)
				}
			}
		}
		slices.Sort(budgets)
		fmt.Fprintf(w, "This report asks whether that pays against what a user does instead: one private run of the network's published settings at the same total budget (the *default*). On %s, at total ε = %s, it compares the best private tuner with the default, paired by seed. ",
			joinAnd(data), joinF(budgets))
		by := map[string][]string{}
		for _, a := range rows {
			d := strings.TrimSuffix(a.dataset, " (JPEG-derived, not comparable)")
			if a.options != "" {
				d += " (" + a.options + ")"
			}
			by[a.verdict] = append(by[a.verdict], fmt.Sprintf("%s at ε = %g", d, a.eps))
		}
		count := func(v string) string {
			n := len(by[v])
			switch {
			case n == 0:
				return fmt.Sprintf("*%s* in none", v)
			case n <= 3 && n < len(rows):
				return fmt.Sprintf("*%s* in %d (%s)", v, n, strings.Join(by[v], ", "))
			}
			return fmt.Sprintf("*%s* in %d", v, n)
		}
		parts := []string{count(VerdictPays), count(VerdictCosts), count(VerdictUnresolved)}
		if n := len(by[VerdictOneSeed]) + len(by["–"]); n > 0 {
			parts = append(parts, fmt.Sprintf("%d without an interval to judge by", n))
		}
		fmt.Fprintf(w, "Of the %d (dataset, ε) cells, the best tuner's 95%% interval says %s. ", len(rows), joinAnd(parts))
	}
	outcomes := map[string]int{}
	for _, v := range vs {
		outcomes[v.Outcome]++
	}
	var tally []string
	for _, o := range []string{"reproduced", "partly reproduced", "not reproduced", "not comparable", "not run"} {
		if outcomes[o] > 0 {
			tally = append(tally, fmt.Sprintf("%d %s", outcomes[o], o))
		}
	}
	if len(vs) > 0 {
		fmt.Fprintf(w, "Beside it, the seed papers' results we reran come to %d verdicts: %s. ", len(vs), joinAnd(tally))
	}
	if len(costs) > 0 {
		fmt.Fprintf(w, "What each tuner costs in wall and CPU seconds, measured in one sitting, is in \"%s\".", costSittingTitle)
	}
}

// joinAnd joins items as English: "a, b and c".
func joinAnd(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// writeAnswer writes the report's question — does private tuning beat
// one run of published settings at the same total ε? — and the table
// answering it (rows: answerRows): per dataset and budget, the default,
// the best private tuner (named) with its paired difference to the
// default, the two not-private references and the verdict on the best
// tuner's interval. It writes nothing without rows.
func writeAnswer(w io.Writer, reps []CompareReport, rows []answerRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "## Does private tuning pay?\n\n")
	fmt.Fprintf(w, "dptune tunes privately so that one ε covers tuning and the released model. What a user does instead of tuning is one private run of the network's published settings at the whole budget (the *default*). Each row below compares, at the same total (ε, δ) and on the same seeds, that default with the best private tuner (by mean test accuracy; its per-seed paired difference to the default with a 95%% Student-t interval), with the recommended tuner (`dptune tune`'s default configuration, chosen on development splits of the training sets: [its page](../guide/tuners/recommended.md); \"–\" where it did not run), and with two references that are **not private** (every candidate trained at the whole ε: the best on clean validation scores, as most papers report, and the oracle best on the test set). The verdict is the best tuner's: *%s*, *%s* or *%s*.\n\n",
		VerdictPays, VerdictCosts, VerdictUnresolved)
	fmt.Fprintln(w, "| dataset | ε | default | best private tuner | − default | recommended | − default | non-private selection (*not private*) | oracle (*not private*) | verdict |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, a := range rows {
		tuner := "–"
		if a.best != nil {
			tuner = fmt.Sprintf("%s: %s", CompareEntry{Tuner: a.best.Tuner, Variant: a.best.Variant}.Name(), meanWithCI(a.best.Accuracy, a.best.CI95, a.best.Seeds))
		}
		dataset := a.dataset
		if a.options != "" {
			dataset += ", " + a.options
		}
		rec := CompareCell{}
		if a.rec != nil {
			rec = *a.rec
		}
		fmt.Fprintf(w, "| %s | %g | %s | %s | %s | %s | %s | %s | %s | %s |\n", dataset, a.eps, meanWithCI(a.def.Accuracy, a.def.CI95, a.def.Seeds), tuner, a.diff,
			optionalCell(rec), a.recDiff, optionalCell(a.sel), optionalCell(a.ora), a.verdict)
	}
	fmt.Fprintln(w)
	for _, r := range reps {
		d := r.Settings.Default
		with := ""
		if o := r.Settings.Options(); o != "" {
			with = "; every tuner with " + o
		}
		fmt.Fprintf(w, "- %s (%s, %d candidates of %s, %d seeds%s): the default is batch %d, %d epochs, %s, momentum %g, %s — %s.\n",
			r.Settings.Dataset, r.Settings.Model, r.Settings.Candidates, r.Settings.Space, len(r.Settings.Seeds), with, d.BatchSize, d.Epochs, r.Settings.defaultRate(*d), d.Momentum, r.Settings.defaultClipping(*d), d.Source)
	}
	fmt.Fprintln(w)
}

// optionalCell is a cell's mean with its interval, "–" for a cell that
// did not run.
func optionalCell(c CompareCell) string {
	if c.Seeds == 0 {
		return "–"
	}
	return meanWithCI(c.Accuracy, c.CI95, c.Seeds)
}
