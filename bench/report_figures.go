package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/dptune/dptune/internal/fsx"
)

// figureWriter writes one benchmark output's figures into a report's
// figures directory, each name prefixed with the output's place so that
// two outputs' figure1.png do not collide.
type figureWriter struct {
	dir, prefix string
	names       []string // written, in order
	// once holds the figures a report shows once, by key, across its
	// outputs (see first).
	once map[string]bool
}

// copy copies the PNG at path, if it exists, into the report.
func (fw *figureWriter) copy(path string) error {
	b, err := fsx.ReadFile(path, maxReportInput)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	name := fw.prefix + filepath.Base(path)
	if err := os.WriteFile(filepath.Join(fw.dir, name), b, 0o644); err != nil {
		return err
	}
	fw.names = append(fw.names, name)
	return nil
}

// draw draws the figure called name into the report.
func (fw *figureWriter) draw(name string, plot func(path string) error) error {
	full := fw.prefix + name
	if err := plot(filepath.Join(fw.dir, full)); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	fw.names = append(fw.names, full)
	return nil
}

// first reports whether key is asked for the first time in this report:
// a figure that several outputs hold the same (DP-Hype's simulation) is
// shown by the first.
func (fw *figureWriter) first(key string) bool {
	if fw.once[key] {
		return false
	}
	fw.once[key] = true
	return true
}

// copyAll copies every PNG beside f: the figures of an output whose kind
// draws none of its own.
func (fw *figureWriter) copyAll(f found) error {
	pngs, _ := filepath.Glob(filepath.Join(filepath.Dir(f.path), "*.png"))
	for _, p := range pngs {
		if err := fw.copy(p); err != nil {
			return err
		}
	}
	return nil
}

// ownedFigure matches the names a report writes into its figures
// directory: an output's place, a dash, a PNG's name.
var ownedFigure = regexp.MustCompile(`^[0-9]{2,}-.+\.png$`)

// clearFigures removes the figures an earlier report wrote into dir, so
// that a figure no longer drawn does not linger; other files stay.
func clearFigures(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Type().IsRegular() && ownedFigure.MatchString(e.Name()) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// compareFigures draws a comparison's paired differences to the default
// (PlotVersus) from its compare.json; the unpaired accuracies with their
// overlapping intervals (PlotCompare's figure beside it) are left out, and
// a cost sitting has no figure.
func compareFigures(fw *figureWriter, f found) error {
	var r CompareReport
	if err := json.Unmarshal(f.raw, &r); err != nil {
		return err
	}
	if r.CostSitting || len(r.Versus) == 0 {
		return nil
	}
	return fw.draw("versus-default-"+r.Settings.Dataset+".png", func(p string) error { return PlotVersus(&r, p) })
}

// tunersFigures draws DP-HyPO's simulation from tuners.json (every mean
// number of runs labelled), or copies tuners.png when it holds no cells.
func tunersFigures(fw *figureWriter, f found) error {
	var r struct {
		Cells []TunerSimCell `json:"cells"`
	}
	if err := json.Unmarshal(f.raw, &r); err != nil {
		return err
	}
	if len(r.Cells) == 0 {
		return fw.copyAll(f)
	}
	return fw.draw("tuners.png", func(p string) error { return PlotTuners(r.Cells, p) })
}

// doublingReportFigures shows Figures 1 and 4 as `bench doubling` drew
// them, and Figure 3 drawn again from figure3.csv as the mean fidelity of
// the searches with a band (not one line per search).
func doublingReportFigures(fw *figureWriter, f found) error {
	dir := filepath.Dir(f.path)
	if err := fw.copy(filepath.Join(dir, "figure1.png")); err != nil {
		return err
	}
	if panels, err := fidelityCSV(filepath.Join(dir, "figure3.csv")); err == nil {
		if err := fw.draw("figure3.png", func(p string) error { return savePair(panels[0], panels[1], p) }); err != nil {
			return err
		}
	} else if err := fw.copy(filepath.Join(dir, "figure3.png")); err != nil {
		return err
	}
	return fw.copy(filepath.Join(dir, "figure4.png"))
}

// voteFigures shows DP-Hype's simulation (figure2a.png, figure2b.png) once
// in a report, from the first output that holds it, and a real-data
// output's figures drawn from its vote.json (every ε labelled), with its
// splits as `bench vote` drew them.
func voteFigures(fw *figureWriter, f found) error {
	var r struct {
		Real   []VoteRealPoint `json:"real"`
		Config map[string]any  `json:"real_config"`
	}
	if err := json.Unmarshal(f.raw, &r); err != nil {
		return err
	}
	dir := filepath.Dir(f.path)
	for _, name := range []string{"figure2a.png", "figure2b.png"} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil && fw.first("DP-Hype simulation "+name) {
			if err := fw.copy(p); err != nil {
				return err
			}
		}
	}
	ds, _ := r.Config["dataset"].(string)
	if len(r.Real) == 0 || ds == "" {
		return nil
	}
	for _, m := range []struct{ final, suffix, title string }{{"non-private", "", "non-private FedAvg"}, {"dp-sgd", "_dpsgd", "DP-SGD FedAvg"}} {
		has := false
		for _, p := range r.Real {
			has = has || p.FinalTraining == m.final
		}
		if !has {
			continue
		}
		if err := fw.draw("vote_"+ds+m.suffix+".png", func(p string) error { return PlotVoteReal(r.Real, m.final, ds+", "+m.title, p) }); err != nil {
			return err
		}
	}
	return fw.copy(filepath.Join(dir, "vote_"+ds+"_splits.png"))
}

// noFigures is the figures of an output whose directory holds other
// benchmarks' (persample JSON beside PyTorch's).
func noFigures(*figureWriter, found) error { return nil }

// figureCaption is the alt text of a figure in the report: its name
// without the output's place and the extension.
func figureCaption(name string) string {
	if i := strings.IndexByte(name, '-'); i >= 0 && ownedFigure.MatchString(name) {
		name = name[i+1:]
	}
	return strings.TrimSuffix(name, ".png")
}
