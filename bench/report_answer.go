package bench

import (
	"encoding/json"
	"fmt"
	"io"
)

// writeAnswer opens the report with its question — does private tuning
// beat one run of published settings at the same total ε? — and one table
// answering it from every comparison that ran the baselines: per dataset
// and budget, the default, the best private tuner (named) with its paired
// difference to the default, the two not-private references and the
// verdict on the best tuner's interval. It writes nothing when no
// comparison has baselines.
func writeAnswer(w io.Writer, all []found) error {
	var reps []CompareReport
	for _, f := range all {
		if f.kind != "compare.json" {
			continue
		}
		var r CompareReport
		if err := json.Unmarshal(f.raw, &r); err != nil {
			return fmt.Errorf("%s: %w", f.path, err)
		}
		if r.Settings.Default != nil {
			reps = append(reps, r)
		}
	}
	if len(reps) == 0 {
		return nil
	}
	fmt.Fprintf(w, "## Does private tuning pay?\n\n")
	fmt.Fprintf(w, "dptune tunes privately so that one ε covers tuning and the released model. What a user does instead of tuning is one private run of the network's published settings at the whole budget (the *default*). Each row below compares, at the same total (ε, δ) and on the same seeds, that default with the best private tuner (by mean test accuracy; its per-seed paired difference to the default with a 95%% Student-t interval), and with two references that are **not private** (every candidate trained at the whole ε: the best on clean validation scores, as most papers report, and the oracle best on the test set). The verdict is the best tuner's: *%s*, *%s* or *%s*.\n\n",
		VerdictPays, VerdictCosts, VerdictUnresolved)
	fmt.Fprintln(w, "| dataset | ε | default | best private tuner | − default | non-private selection (*not private*) | oracle (*not private*) | verdict |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
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
			var best *CompareCell
			for _, c := range r.Cells {
				if e := (CompareEntry{Tuner: c.Tuner, Variant: c.Variant}); e.IsBaseline() || c.Budget != eps {
					continue
				}
				if best == nil || c.Accuracy > best.Accuracy {
					best = &c
				}
			}
			sel, _ := r.cell(BaselineSelection, "", eps)
			ora, _ := r.cell(BaselineOracle, "", eps)
			tuner, diff, v := "–", "–", "–"
			if best != nil {
				e := CompareEntry{Tuner: best.Tuner, Variant: best.Variant}
				tuner = fmt.Sprintf("%s: %s", e.Name(), meanWithCI(best.Accuracy, best.CI95, best.Seeds))
				mean, half, n := r.paired(e, CompareEntry{Tuner: BaselineDefault}, eps)
				if n > 0 {
					diff, v = signedWithCI(mean, half, n), verdict(mean, half, n)
				}
			}
			fmt.Fprintf(w, "| %s | %g | %s | %s | %s | %s | %s | %s |\n", name, eps, meanWithCI(def.Accuracy, def.CI95, def.Seeds), tuner, diff,
				meanWithCI(sel.Accuracy, sel.CI95, sel.Seeds), meanWithCI(ora.Accuracy, ora.CI95, ora.Seeds), v)
		}
	}
	fmt.Fprintln(w)
	for _, r := range reps {
		d := r.Settings.Default
		fmt.Fprintf(w, "- %s (%s, %d candidates of %s, %d seeds): the default is batch %d, %d epochs, η = %g, momentum %g, C = %g — %s.\n",
			r.Settings.Dataset, r.Settings.Model, r.Settings.Candidates, r.Settings.Space, len(r.Settings.Seeds), d.BatchSize, d.Epochs, d.LearningRate, d.Momentum, d.ClipNorm, d.Source)
	}
	fmt.Fprintln(w)
	return nil
}
