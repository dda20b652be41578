//go:build dptune_plant_no_clip

package dpsgd

// A planted bug (see planted.go): no example's gradient is clipped.
func init() { plantedNoClip = true }
