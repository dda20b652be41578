package main

import (
	"strings"

	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/privacy/budget"
)

func newBudgetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "budget",
		Short: "The curator's privacy budget for one dataset, composed across runs",
		Long: `A budget file caps the privacy spent on one dataset over every run that
touches it: re-running a tuner or a training on the same data composes. The
curator creates one file per dataset and passes --budget FILE to every
command that uses the private data; each run reserves its worst case before
it starts, is refused if that would exceed the cap, and records what it
actually spent when it ends. A run killed before it ends stays charged at its
worst case.

The file composes the runs' RDP curves at fixed orders and is an RDP privacy
filter (Feldman & Zrnic 2021), valid even when each run's parameters were
chosen after seeing earlier results. See the documentation of package
privacy/budget for the rule and its proof.

An image folder's budget names it as its runs do, folder:NAME with NAME the
data directory's last element, and needs the folder's public nominal size
for the check δ < 1/N.

  dptune budget init mnist.budget --epsilon 3 --delta 1e-5 --dataset mnist
  dptune budget init photos.budget --epsilon 3 --delta 1e-5 --dataset folder:photos --nominal-size 12000
  dptune budget show mnist.budget`,
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	cmd.AddCommand(newBudgetInitCmd(), newBudgetShowCmd())
	return cmd
}

// oneFile accepts exactly one FILE argument, with a usage error otherwise.
func oneFile(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usagef("%s takes one FILE argument, have %d", cmd.CommandPath(), len(args))
	}
	return nil
}

func newBudgetInitCmd() *cobra.Command {
	var f job.BudgetRequest
	cmd := &cobra.Command{
		Use:   "init FILE --epsilon E --delta D --dataset NAME",
		Short: "Create a budget file with cap (ε, δ) for one dataset (never overwrites)",
		Args:  oneFile,
		RunE:  func(cmd *cobra.Command, args []string) error { return runBudgetInit(cmd, args[0], f) },
	}
	fl := cmd.Flags()
	fl.Float64Var(&f.Epsilon, "epsilon", 0, "the cap ε in nats: every run on the dataset together stays within it")
	fl.Float64Var(&f.Delta, "delta", 0, "the cap δ: positive and below 1/N, N the dataset's published size ("+job.NominalSizeHelp()+")")
	fl.StringVar(&f.Dataset, "dataset", "", "the dataset the budget is for: "+strings.Replace(data.NamesList(), " or ", ", ", 1)+" or folder:NAME (an image folder whose data directory is called NAME, as its runs' reports name it)")
	fl.IntVar(&f.NominalSize, "nominal-size", 0, "public size N of the training set, for the check δ < 1/N: required for folder:NAME; for a built-in dataset, the size of the copy in --data-dir if not its published one")
	return cmd
}

func runBudgetInit(cmd *cobra.Command, path string, f job.BudgetRequest) error {
	f.Given = given(cmd)
	if err := f.Init(path); err != nil {
		return err
	}
	b, err := job.LoadBudget(path)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "created budget %s for dataset %s: cap ε = %g at δ = %g (RDP filter over %d fixed orders)\n",
		path, b.Dataset, b.Epsilon, b.Delta, len(b.Orders))
	return err
}

func newBudgetShowCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show FILE",
		Short: "Print a budget file's releases, the composed total, what remains, and PLD's informational figure",
		Args:  oneFile,
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := job.LoadBudget(args[0])
			if err != nil {
				return err
			}
			r := b.Show()
			out := cmd.OutOrStdout()
			if asJSON {
				data, err := json.MarshalIndent(r, "", "  ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(out, "%s\n", data)
				return err
			}
			return printBudget(out, r)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON instead of text")
	return cmd
}

func printBudget(w io.Writer, r budget.Report) error {
	fmt.Fprintf(w, "budget %s: dataset %s, cap ε = %g at δ = %g (RDP filter over %d fixed orders)\n",
		r.Path, r.Dataset, r.Epsilon, r.Delta, len(r.Orders))
	if len(r.Releases) == 0 {
		fmt.Fprintln(w, "no releases")
	} else {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tTIME\tCOMMAND\tSTATUS\tε ALONE\tLABEL")
		for _, rel := range r.Releases {
			id := rel.ID
			if len(id) > 8 {
				id = id[:8]
			}
			status := string(rel.Status)
			if rel.Status == budget.Reserved {
				status = "reserved (worst case)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.4g\t%s\n", id, rel.Time.Format(time.RFC3339), rel.Command, status, rel.Epsilon, rel.Label)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	order := ""
	if r.Order > 0 {
		order = fmt.Sprintf(", order %g", r.Order)
	}
	fmt.Fprintf(w, "spent      ε = %.4g of %g (RDP filter, composed%s)\n", r.Spent, r.Epsilon, order)
	fmt.Fprintf(w, "remaining  ε = %.4g\n", r.Remaining)
	if r.PLD.Available {
		fmt.Fprintf(w, "PLD        ε = %.4g at δ = %g — %s\n", r.PLD.Epsilon, r.Delta, budget.PLDNote)
	} else {
		fmt.Fprintf(w, "PLD        unavailable (%s) — %s\n", r.PLD.Reason, budget.PLDNote)
	}
	return nil
}
