//go:build dptune_plant_quarter_noise

package dpsgd

// A planted bug (see planted.go): noise of σ/4 where the ledger records σ.
func init() { plantedNoiseScale = 0.25 }
