package bench

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/dptune/dptune/federated"
	"github.com/dptune/dptune/internal/randsrc"
)

// VoteSimConfig is the setup of DP-Hype's Figure 2 simulation (Section
// V-B). The paper's values were lost in extraction; these are ours: each
// client's local loss of a good candidate is N(GoodMean, s²), of a bad one
// N(BadMean, s²); it votes for its ℓ lowest losses.
type VoteSimConfig struct {
	Candidates, Clients int     // |H| and n
	GoodMean, BadMean   float64 // local loss means of good and bad candidates
	Delta               float64 // δ of every ε
	Reps                int     // repetitions per point, in [1, MaxVoteReps]
	Seed                uint64
	// Figure 2a: |G| = Good2a, loss standard deviations LossStddevs, ℓ ∈
	// Votes2a, ε ∈ Epsilons2a.
	Good2a      int
	LossStddevs []float64
	Votes2a     []int
	Epsilons2a  []float64
	// Figure 2b: s = LossStddev2b, |G| ∈ Goods2b, ℓ ∈ Votes2b, ε ∈ Epsilons2b.
	LossStddev2b float64
	Goods2b      []int
	Votes2b      []int
	Epsilons2b   []float64
}

// DefaultVoteSim is dptune bench vote's simulation setup: |H| = 50
// candidates, n = 100 clients, losses 0 (good) and 1 (bad), δ = 1e-5,
// 1,000 repetitions.
var DefaultVoteSim = VoteSimConfig{Candidates: 50, Clients: 100, GoodMean: 0, BadMean: 1, Delta: 1e-5, Reps: 1000, Seed: 1,
	Good2a: 5, LossStddevs: []float64{0.25, 0.5, 1, 2}, Votes2a: []int{1, 2, 5, 10, 20},
	Epsilons2a:   []float64{0.01, 0.03, 0.1, 0.3, 1, 3, 10},
	LossStddev2b: 0.5, Goods2b: []int{1, 2, 5, 10, 20, 50}, Votes2b: []int{1, 5, 20, 50}, Epsilons2b: []float64{0.1, 0.3, 1}}

// VoteSimPoint is one point of Figure 2: the fraction of repetitions whose
// vote selected a good candidate, with its 95% interval, beside the mean of
// Theorem V.1's bound over the same repetitions and random guessing |G|/|H|.
type VoteSimPoint struct {
	Figure         string  `json:"figure"` // "2a" or "2b"
	LossStddev     float64 `json:"loss_stddev"`
	Good           int     `json:"good"`
	VotesPerClient int     `json:"votes_per_client"`
	Epsilon        float64 `json:"epsilon"`
	NoiseStddev    float64 `json:"noise_stddev"` // σ of the sum, in votes
	Success        float64 `json:"success"`
	CI95           float64 `json:"ci95"` // half-width, normal approximation
	Bound          float64 `json:"theorem_v1_bound"`
	RandGuess      float64 `json:"rand_guess"`
}

// VoteFigure2 runs the simulation and writes figure2a.png, figure2b.png
// and vote_sim.csv into dir. Each point's noise σ is federated.Calibrate's for
// (ε, δ) at client level, so the noise is the mechanism's own; it is drawn
// as the continuous N(0, σ²) the theorem assumes (the discrete shares at
// scale S = 1024 sum to the same within 1/S of a vote).
func VoteFigure2(ctx context.Context, cfg VoteSimConfig, dir string) ([]VoteSimPoint, error) {
	if err := CheckVoteReps("bench vote: simulation repetitions", cfg.Reps); err != nil {
		return nil, err
	}
	var pts []VoteSimPoint
	for _, s := range cfg.LossStddevs {
		p, err := voteSimPanel(ctx, cfg, "2a", s, []int{cfg.Good2a}, cfg.Votes2a, cfg.Epsilons2a)
		if err != nil {
			return nil, err
		}
		pts = append(pts, p...)
	}
	p, err := voteSimPanel(ctx, cfg, "2b", cfg.LossStddev2b, cfg.Goods2b, cfg.Votes2b, cfg.Epsilons2b)
	if err != nil {
		return nil, err
	}
	pts = append(pts, p...)
	var rows [][]string
	for _, p := range pts {
		rows = append(rows, []string{p.Figure, fmtF(p.LossStddev), strconv.Itoa(p.Good), strconv.Itoa(p.VotesPerClient), fmtF(p.Epsilon),
			fmtF(p.NoiseStddev), fmtF(p.Success), fmtF(p.CI95), fmtF(p.Bound), fmtF(p.RandGuess)})
	}
	if err := writeCSV(filepath.Join(dir, "vote_sim.csv"), []string{"figure", "loss_stddev", "good", "votes_per_client", "epsilon",
		"noise_stddev", "success", "ci95", "theorem_v1_bound", "rand_guess"}, rows); err != nil {
		return nil, err
	}
	if err := plotVoteSim(pts, cfg, dir); err != nil {
		return nil, err
	}
	return pts, nil
}

// voteSimPanel simulates every (|G|, ℓ, ε) at loss deviation s. Each
// repetition draws the clients' losses once and tallies them for every ℓ,
// so the ℓ curves share their data, as the ε values do.
func voteSimPanel(ctx context.Context, cfg VoteSimConfig, fig string, s float64, goods, votes []int, eps []float64) ([]VoteSimPoint, error) {
	h, n := cfg.Candidates, cfg.Clients
	sigma := map[[2]float64]float64{}
	for _, l := range votes {
		for _, e := range eps {
			m, err := federated.Calibrate(ctx, federated.Mechanism{Clients: n, Candidates: h, VotesPerClient: l, Scale: federated.DefaultScale}, e, cfg.Delta)
			if err != nil {
				return nil, fmt.Errorf("bench vote: ℓ = %d, ε = %v: %w", l, e, err)
			}
			sigma[[2]float64{float64(l), e}] = m.NoiseStddev
		}
	}
	var out []VoteSimPoint
	for _, g := range goods {
		type acc struct{ wins, bound float64 }
		res := make(map[[2]float64]*acc)
		for _, l := range votes {
			for _, e := range eps {
				res[[2]float64{float64(l), e}] = &acc{}
			}
		}
		rng := randsrc.Seeded(cfg.Seed, fmt.Sprintf("vote sim %s s=%g g=%d", fig, s, g))
		good := make([]bool, h)
		for i := range g {
			good[i] = true
		}
		loss := make([]float64, h)
		idx := make([]int, h)
		counts := make(map[int][]float64, len(votes))
		for rep := 0; rep < cfg.Reps; rep++ {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			for _, l := range votes {
				counts[l] = make([]float64, h)
			}
			for range n {
				for i := range loss {
					mu := cfg.BadMean
					if good[i] {
						mu = cfg.GoodMean
					}
					loss[i] = mu + s*rng.NormFloat64()
					idx[i] = i
				}
				slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(loss[a], loss[b]) })
				for _, l := range votes {
					for _, i := range idx[:l] {
						counts[l][i]++
					}
				}
			}
			for _, l := range votes {
				for _, e := range eps {
					sg := sigma[[2]float64{float64(l), e}]
					best, arg := math.Inf(-1), 0
					for i, c := range counts[l] {
						if v := c + sg*rng.NormFloat64(); v > best {
							best, arg = v, i
						}
					}
					a := res[[2]float64{float64(l), e}]
					if good[arg] {
						a.wins++
					}
					a.bound += federated.GoodSelectionBound(counts[l], good, sg)
				}
			}
		}
		for _, l := range votes {
			for _, e := range eps {
				a := res[[2]float64{float64(l), e}]
				p := a.wins / float64(cfg.Reps)
				out = append(out, VoteSimPoint{Figure: fig, LossStddev: s, Good: g, VotesPerClient: l, Epsilon: e,
					NoiseStddev: sigma[[2]float64{float64(l), e}], Success: p, CI95: 1.96 * math.Sqrt(p*(1-p)/float64(cfg.Reps)),
					Bound: a.bound / float64(cfg.Reps), RandGuess: float64(g) / float64(h)})
			}
		}
	}
	return out, nil
}

// plotVoteSim draws Figure 2a (one panel per loss deviation: success
// against ε, a line per ℓ, Theorem V.1's bound dashed) and 2b (one panel
// per ε: success against |G|, a line per ℓ, random guessing dotted).
func plotVoteSim(pts []VoteSimPoint, cfg VoteSimConfig, dir string) error {
	var a []*plot.Plot
	for _, s := range cfg.LossStddevs {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("|G| = %d of %d, n = %d, loss sd %g", cfg.Good2a, cfg.Candidates, cfg.Clients, s)
		p.X.Label.Text, p.Y.Label.Text = "ε (δ = 1e-5), log scale", "P(good selected)"
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
		p.Y.Min, p.Y.Max = 0, 1.02
		for li, l := range cfg.Votes2a {
			var xy, bd plotter.XYs
			for _, q := range pts {
				if q.Figure == "2a" && q.LossStddev == s && q.VotesPerClient == l {
					xy = append(xy, plotter.XY{X: q.Epsilon, Y: q.Success})
					bd = append(bd, plotter.XY{X: q.Epsilon, Y: q.Bound})
				}
			}
			addLine(p, xy, li, false, fmt.Sprintf("ℓ = %d", l))
			addLine(p, bd, li, true, "")
		}
		p.Legend.Top, p.Legend.Left = true, true
		a = append(a, p)
	}
	if err := savePanels([][]*plot.Plot{a[:len(a)/2], a[len(a)/2:]}, vg.Points(900), vg.Points(700), filepath.Join(dir, "figure2a.png")); err != nil {
		return err
	}
	var b []*plot.Plot
	for _, e := range cfg.Epsilons2b {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("ε = %g, loss sd %g, n = %d", e, cfg.LossStddev2b, cfg.Clients)
		p.X.Label.Text, p.Y.Label.Text = "good candidates |G| (log scale)", "P(good selected)"
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
		p.Y.Min, p.Y.Max = 0, 1.02
		var guess plotter.XYs
		for li, l := range cfg.Votes2b {
			var xy plotter.XYs
			for _, q := range pts {
				if q.Figure == "2b" && q.Epsilon == e && q.VotesPerClient == l {
					xy = append(xy, plotter.XY{X: float64(q.Good), Y: q.Success})
					if li == 0 {
						guess = append(guess, plotter.XY{X: float64(q.Good), Y: q.RandGuess})
					}
				}
			}
			addLine(p, xy, li, false, fmt.Sprintf("ℓ = %d", l))
		}
		l, _ := plotter.NewLine(guess)
		l.Dashes = []vg.Length{vg.Points(1), vg.Points(3)}
		p.Add(l)
		p.Legend.Add("random guess", l)
		p.Legend.Top, p.Legend.Left = false, false
		b = append(b, p)
	}
	return savePanels([][]*plot.Plot{b}, vg.Points(1200), vg.Points(380), filepath.Join(dir, "figure2b.png"))
}

// addLine adds a line with points in colour i (dashed, without points and
// legend, if dashed).
func addLine(p *plot.Plot, xy plotter.XYs, i int, dashed bool, name string) {
	if len(xy) == 0 {
		return
	}
	if dashed {
		l, _ := plotter.NewLine(xy)
		l.Color = plotutil.Color(i)
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		return
	}
	l, sc, _ := plotter.NewLinePoints(xy)
	l.Color, sc.Color = plotutil.Color(i), plotutil.Color(i)
	p.Add(l, sc)
	if name != "" {
		p.Legend.Add(name, l, sc)
	}
}
