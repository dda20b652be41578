package tuning

// Default is the tuner used when none is named.
const Default = "randomstop"

// The built-in tuners, registered in this order (help text and errors list
// them so). Each lives in its own file.
func init() {
	Register(randomStop{})
	Register(gpTuner{})
	Register(doublingTuner{})
	Register(gridTuner{})
}
