package data

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/stat/distmv"
)

// SplitClients deals d among n clients, as a federated simulation does.
// With alpha = 0 the split is IID: equal random shares (Partition). With
// alpha > 0 it is the non-IID split of DP-Hype's experiments (and of Hsu,
// Qi & Brown 2019): for each label, the clients' proportions of its
// examples are drawn from Dirichlet(alpha·1_n), the label's examples are
// shuffled and dealt in those proportions. Small alpha gives each client
// few labels; large alpha approaches IID. Clients are named "NAME/client-i"
// and may be empty under a small alpha; every example goes to one client.
//
// Errors: n < 1 or more clients than examples, alpha negative or not finite.
func SplitClients(d *Dataset, n int, alpha float64, rng *rand.Rand) ([]*Dataset, error) {
	if n < 1 || n > d.N {
		return nil, fmt.Errorf("split %s: %d clients for %d examples", d.Name, n, d.N)
	}
	if !(alpha >= 0) || math.IsInf(alpha, 1) {
		return nil, fmt.Errorf("split %s: Dirichlet concentration %v must be ≥ 0 and finite (0: IID)", d.Name, alpha)
	}
	if alpha == 0 {
		parts, err := Partition(d, n, rng)
		for i, p := range parts {
			p.Name = fmt.Sprintf("%s/client-%d", d.Name, i+1)
		}
		return parts, err
	}
	byLabel := make([][]int, d.Classes)
	for i, y := range d.Y {
		byLabel[y] = append(byLabel[y], i)
	}
	conc := make([]float64, n)
	for i := range conc {
		conc[i] = alpha
	}
	dir := distmv.NewDirichlet(conc, rand.NewPCG(rng.Uint64(), rng.Uint64()))
	idx := make([][]int, n)
	p := make([]float64, n)
	for _, ex := range byLabel {
		rng.Shuffle(len(ex), func(i, j int) { ex[i], ex[j] = ex[j], ex[i] })
		dir.Rand(p)
		// Deal by cumulative proportion, so the counts sum to len(ex).
		start, cum := 0, 0.0
		for c := range n {
			cum += p[c]
			end := int(math.Round(cum * float64(len(ex))))
			if c == n-1 || end > len(ex) {
				end = len(ex)
			}
			if end < start {
				end = start
			}
			idx[c] = append(idx[c], ex[start:end]...)
			start = end
		}
	}
	parts := make([]*Dataset, n)
	for c := range parts {
		rng.Shuffle(len(idx[c]), func(i, j int) { idx[c][i], idx[c][j] = idx[c][j], idx[c][i] })
		parts[c] = d.Subset(fmt.Sprintf("%s/client-%d", d.Name, c+1), idx[c])
	}
	return parts, nil
}

// LabelCounts returns, for each client, how many of its examples have each
// label: the histogram of a split ([clients][classes]).
func LabelCounts(clients []*Dataset) [][]int {
	out := make([][]int, len(clients))
	for i, c := range clients {
		out[i] = make([]int, c.Classes)
		for _, y := range c.Y {
			out[i][y]++
		}
	}
	return out
}
