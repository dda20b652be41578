package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dptune/dptune/bench"
)

func newBenchReportCmd() *cobra.Command {
	var out string
	var from []string
	cmd := &cobra.Command{
		Use:   "report",
		Short: "one report.html and report.md from every benchmark's output, with the figures and the papers' numbers beside ours",
		Long: wrapText("report searches the --from directories for the outputs of the other bench commands — "+bench.ReportInputs()+
			" (beside PyTorch's, from make bench-torch) — and writes --out/report.md and --out/report.html. They open with an abstract"+
			" and the answer table (does private tuning beat one run of published settings?), then contents, a glossary and a table of"+
			" each paper result we reran beside the published one with a verdict (reproduced, partly, not reproduced and why, or not"+
			" comparable), then a section per benchmark with its tables, figures (drawn from its data or copied into --out/figures, whose"+
			" figures from an earlier report are removed first), command, machine and load, and a comparison's cost per tuner.", 77),
		Example: `  dptune bench report --from out/bench-compare,out/bench-tuners,out/torch --out out/report`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c := bench.ReportConfig{Inputs: from, Out: out}
			if err := c.CheckRequest(); err != nil {
				return err
			}
			sum, err := bench.WriteReport(c)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			for _, v := range sum.Verdicts {
				fmt.Fprintf(w, "%-16s %s — %s\n", v.Outcome, v.Paper, v.Result)
			}
			fmt.Fprintf(w, "%d sections, %d figures: %s and %s\n", len(sum.Sections), len(sum.Figures),
				filepath.Join(out, "report.html"), filepath.Join(out, "report.md"))
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "out/report", "directory for report.html, report.md and figures/")
	cmd.Flags().StringSliceVar(&from, "from", []string{"out"}, "directories searched for benchmark outputs")
	return cmd
}

// wrapText breaks s into lines of at most width characters at spaces.
func wrapText(s string, width int) string {
	var b strings.Builder
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
		case len([]rune(line))+1+len([]rune(w)) > width:
			b.WriteString(line + "\n")
			line = w
		default:
			line += " " + w
		}
	}
	b.WriteString(line)
	return b.String()
}
