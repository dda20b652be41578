package main

import (
	"fmt"

	"github.com/dptune/dptune/dpsgd/accounting"
)

// accountantByName returns the accountant called name, or a usage error.
// The GDP accountant's central limit theorem is an approximation, not an
// upper bound, so it is offered only where approximate is true (for
// reporting, never for calibrating a run).
func accountantByName(name string, approximate bool) (accounting.Accountant, error) {
	switch name {
	case "rdp":
		return accounting.RDP{}, nil
	case "pld":
		return accounting.PLD{}, nil
	case "gdp":
		if approximate {
			return accounting.GDP{}, nil
		}
		return nil, usagef("the gdp accountant is a central-limit approximation, not an upper bound on ε; use rdp or pld here")
	}
	if approximate {
		return nil, usagef("unknown accountant %q (want rdp, pld or gdp)", name)
	}
	return nil, usagef("unknown accountant %q (want rdp or pld)", name)
}

// describeAccountant names an accountant for people, with the RDP order.
func describeAccountant(name string, order float64) string {
	switch name {
	case "rdp":
		if order > 0 {
			return fmt.Sprintf("rdp accountant, order %g", order)
		}
	case "pld":
		return "pld accountant, upper bound"
	case "gdp":
		return "gdp accountant: central-limit approximation, not a bound"
	}
	return name + " accountant"
}
