package main

import (
	"fmt"
)

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
	case "xiang-o", "xiang-g":
		return name + ": Xiang et al.'s Algorithm 3, an APPROXIMATION, not a proved bound"
	}
	return name + " accountant"
}
