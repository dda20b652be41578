package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"

	"github.com/dptune/dptune/internal/fsx"
)

// ReportConfig is one report over the outputs of earlier benchmarks.
type ReportConfig struct {
	// Inputs are directories searched (recursively) for the benchmarks'
	// JSON outputs (ReportInputs): compare.json, tuners.json, each
	// registered benchmark's, audit-figures.json, vote.json, and
	// `bench persample --json` files (beside PyTorch's, from
	// `make bench-torch`).
	Inputs []string
	// Out receives report.md, report.html and figures/ (the PNGs found
	// beside each JSON).
	Out string
}

// ReportSummary says what a report holds.
type ReportSummary struct {
	Sections []string  // the benchmarks found, in report order
	Figures  []string  // figure files copied into Out/figures
	Verdicts []Verdict // one per paper result compared
}

// Verdict is one published result beside ours.
type Verdict struct {
	Paper, Result, Published, Ours string
	// Outcome is "reproduced", "partly reproduced" (ahead beyond the
	// intervals at some budgets, within them at the others), "not
	// reproduced", "not comparable" or
	// "not run" (no input judges it: a seed paper's headline, see
	// headlines); Why says why, in one line.
	Outcome, Why string
}

// found is one benchmark output: its kind, path and parsed JSON.
type found struct {
	kind, path string
	raw        []byte
}

// reportKind is one benchmark output a report reads: its file name
// ("persample" for `bench persample --json` files, found by their
// content), its place in the report (rank, increasing), its section, and
// the figures the section shows (nil: every PNG beside the output).
type reportKind struct {
	name    string
	rank    int
	section func(w *strings.Builder, f found) ([]Verdict, error)
	figures func(fw *figureWriter, f found) error
}

// reportKinds are the outputs a report reads, in report order: these, and
// those a benchmark's own file registers (registerReportKind).
var reportKinds = []reportKind{
	{name: "compare.json", rank: 10, section: compareSection, figures: compareFigures},
	{name: "persample", rank: 20, section: persampleSection, figures: noFigures},
	{name: "tuners.json", rank: 30, section: tunersSection, figures: tunersFigures},
	{name: "audit-figures.json", rank: 50, section: auditSection},
	{name: "vote.json", rank: 60, section: voteSection, figures: voteFigures},
}

// registerReportKind adds k to the report, in its rank's place (from an
// init function).
func registerReportKind(k reportKind) {
	i := slices.IndexFunc(reportKinds, func(r reportKind) bool { return r.rank > k.rank })
	if i < 0 {
		i = len(reportKinds)
	}
	reportKinds = slices.Insert(reportKinds, i, k)
}

// reportKindIndex is the place of the output called name in the report,
// −1 if a report does not read it.
func reportKindIndex(name string) int {
	return slices.IndexFunc(reportKinds, func(r reportKind) bool { return r.name == name })
}

// ReportInputs lists the outputs a report reads as English: "a.json, b.json
// and persample JSON".
func ReportInputs() string {
	var names []string
	for _, k := range reportKinds {
		if k.name != "persample" {
			names = append(names, k.name)
		}
	}
	return strings.Join(names, ", ") + " and persample JSON"
}

// maxReportInput bounds each JSON output and figure a report reads: the
// largest benchmark output is a few megabytes.
const maxReportInput = 64 << 20

// WriteReport collects the benchmarks' outputs under cfg.Inputs into
// cfg.Out/report.md and report.html (the same text, rendered by goldmark),
// with the figures, the machine and load each ran on, their commands, and
// for each paper result we reran a verdict. It returns an error when no
// output is found or one cannot be read.
func WriteReport(cfg ReportConfig) (*ReportSummary, error) {
	var all []found
	for _, in := range cfg.Inputs {
		err := filepath.WalkDir(in, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(p, ".json") || strings.Contains(p, string(filepath.Separator)+"runs"+string(filepath.Separator)) {
				return nil
			}
			b, err := fsx.ReadFile(p, maxReportInput)
			if err != nil {
				return err
			}
			kind := filepath.Base(p)
			if reportKindIndex(kind) < 0 {
				var probe struct {
					Flop    float64 `json:"flop_per_example"`
					Results []any   `json:"results"`
				}
				if json.Unmarshal(b, &probe) != nil || probe.Flop == 0 || len(probe.Results) == 0 {
					return nil
				}
				kind = "persample"
			}
			all = append(all, found{kind, p, b})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("bench: no benchmark output (%s) under %s", strings.Replace(ReportInputs(), " and persample", ", persample", 1), strings.Join(cfg.Inputs, ", "))
	}
	sort.SliceStable(all, func(i, j int) bool {
		return reportKindIndex(all[i].kind) < reportKindIndex(all[j].kind)
	})
	figDir := filepath.Join(cfg.Out, "figures")
	if err := clearFigures(figDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(figDir, 0o755); err != nil {
		return nil, err
	}
	sum := &ReportSummary{}
	var body bytes.Buffer
	once := map[string]bool{}
	for i, f := range all {
		fw := &figureWriter{dir: figDir, prefix: fmt.Sprintf("%02d-", i), once: once}
		if err := reportFigures(fw, f); err != nil {
			return nil, fmt.Errorf("bench: %s: %w", f.path, err)
		}
		sum.Figures = append(sum.Figures, fw.names...)
		sec, v, err := reportSection(f, fw.names)
		if err != nil {
			return nil, fmt.Errorf("bench: %s: %w", f.path, err)
		}
		sum.Sections = append(sum.Sections, f.kind)
		sum.Verdicts = append(sum.Verdicts, v...)
		body.WriteString(sec)
	}
	sum.Verdicts = withHeadlines(sum.Verdicts)
	reps, err := answerReports(all)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	// The report opens with its answer: an abstract and the answer table;
	// then its contents, a glossary, and the rest.
	var head, rest bytes.Buffer
	fmt.Fprintf(&head, "# dptune benchmark report\n\nGenerated %s by `dptune bench report` from %d benchmark output(s).\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), len(all))
	answers := answerRows(reps)
	writeAbstract(&head, reps, answers, sum.Verdicts, costSittings(all))
	writeAnswer(&head, reps, answers)
	writeGlossary(&rest)
	writeMachine(&rest)
	writeVerdicts(&rest, sum.Verdicts)
	rest.Write(body.Bytes())
	md := withContents(head.Bytes(), rest.Bytes())
	if err := os.WriteFile(filepath.Join(cfg.Out, "report.md"), md, 0o644); err != nil {
		return nil, err
	}
	html, err := renderHTML(md)
	if err != nil {
		return nil, err
	}
	return sum, os.WriteFile(filepath.Join(cfg.Out, "report.html"), html, 0o644)
}

// reportFigures writes f's figures into the report (fw): those its kind
// draws or picks, or every PNG beside it.
func reportFigures(fw *figureWriter, f found) error {
	if i := reportKindIndex(f.kind); i >= 0 && reportKinds[i].figures != nil {
		return reportKinds[i].figures(fw, f)
	}
	return fw.copyAll(f)
}

// writeMachine describes the machine the report was made on.
func writeMachine(w io.Writer) {
	model := cpuModel()
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		mem = strings.TrimSpace(strings.TrimPrefix(strings.SplitN(string(b), "\n", 2)[0], "MemTotal:"))
	}
	fmt.Fprintf(w, "## Machine\n\nThis report was generated on: %s, %d logical CPUs, %s memory, %s %s/%s; load average now %s. Each benchmark's own section gives the CPUs and load it recorded while it ran (machines differ from session to session; compare speeds only within one section).\n\n",
		model, runtime.NumCPU(), mem, runtime.Version(), runtime.GOOS, runtime.GOARCH, LoadAvg())
}

// writeVerdicts writes the table of published results beside ours.
func writeVerdicts(w io.Writer, vs []Verdict) {
	if len(vs) == 0 {
		return
	}
	fmt.Fprint(w, "## The papers' results beside ours\n\nEvery seed paper's headline result, and every other published result a benchmark below reran; each verdict is explained in its section.\n\n| paper | result | published | ours | verdict |\n|---|---|---|---|---|\n")
	for _, v := range vs {
		fmt.Fprintf(w, "| %s | %s | %s | %s | **%s**: %s |\n", v.Paper, v.Result, v.Published, v.Ours, v.Outcome, v.Why)
	}
	fmt.Fprintln(w)
}

// reportSection is one benchmark's section and its verdicts.
func reportSection(f found, figs []string) (string, []Verdict, error) {
	var b strings.Builder
	var vs []Verdict
	var err error
	if i := reportKindIndex(f.kind); i >= 0 {
		vs, err = reportKinds[i].section(&b, f)
	}
	if err != nil {
		return "", nil, err
	}
	for _, fig := range figs {
		fmt.Fprintf(&b, "![%s](figures/%s)\n\n", figureCaption(fig), fig)
	}
	return b.String(), vs, nil
}

// renderHTML renders the report's markdown as a standalone HTML page.
func renderHTML(md []byte) ([]byte, error) {
	var body bytes.Buffer
	// Headings get the ids GitHub gives them, which the contents link to.
	ctx := parser.NewContext(parser.WithIDs(&headingIDs{slugs: newSlugger()}))
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithParserOptions(parser.WithAutoHeadingID()))
	if err := gm.Convert(md, &body, parser.WithContext(ctx)); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.WriteString(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>dptune benchmark report</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em; color: #222; line-height: 1.45; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.92em; }
th, td { border: 1px solid #bbb; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #eef; }
tr:nth-child(even) td { background: #f8f8f8; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }
code, pre { background: #f4f4f4; font-size: 0.9em; }
pre { padding: 0.6em; overflow-x: auto; }
h2 { border-bottom: 2px solid #99c; padding-bottom: 0.2em; margin-top: 2em; }
</style></head><body>
`)
	out.Write(body.Bytes())
	out.WriteString("</body></html>\n")
	return out.Bytes(), nil
}
