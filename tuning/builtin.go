package tuning

import "github.com/dptune/dptune/privacy/accounting"

// Default is the tuner used when none is named.
const Default = RecommendedName

// The built-in tuners, registered in this order (help text and errors list
// them so). Each lives in its own file.
func init() {
	Register(randomStop{})
	Register(gpTuner{})
	Register(doublingTuner{})
	Register(gridTuner{})
	Register(recommended{})
}

// LineupEntry is one tuner as a benchmark compares it: a registered tuner
// and, for one whose number of runs is drawn, the distribution compared
// (accounting.TNB or accounting.Poisson; "": the tuner's own choice).
type LineupEntry struct {
	Tuner, Runs string
}

// Lineup is the built-in tuners as `dptune bench compare` compares them by
// default, in its tables' order: the naive baseline first, random-stop with
// each distribution of K, then the tuners built on it, and the recommended
// configuration last.
var Lineup = []LineupEntry{{Tuner: GridName}, {Tuner: RandomStopName, Runs: accounting.TNB},
	{Tuner: RandomStopName, Runs: accounting.Poisson}, {Tuner: GPName}, {Tuner: DoublingName}, {Tuner: RecommendedName}}
