package dpsgd

// Planted bugs, for the audit's standing test alone: a build with the tag
// dptune_plant_quarter_noise adds noise of a quarter of the σ the ledger
// records (planted_quarter_noise.go), and one with dptune_plant_no_clip
// clips no example (planted_no_clip.go, through ClipFactor and
// AutoClipFactor). `make test`
// builds package audit's TestPlantedBugCaught with each tag and requires the
// tight DP-SGD audit to find ε_L above the claimed ε. Without the tags —
// every other build, the dptune binary's included — these are the correct
// values, and nothing else sets them.
var (
	plantedNoiseScale = 1.0
	plantedNoClip     = false
)
