package job

import (
	"fmt"
	"maps"
	"slices"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/tuning"
)

// networksOf resolves the choices of space's network dimension
// (tuning.Network) against src: each a built-in network or a .json network
// spec (model.LoadSpec), which must read src's images and classes through
// the same fixed front end as src's own network, so that every candidate
// trains on the inputs loaded once. It returns nil for a space without the
// dimension, and an error wrapping ErrInvalid naming a choice that is no
// network or does not fit.
func networksOf(src Source, space tuning.Space) (map[string]model.Arch, error) {
	var out map[string]model.Arch
	for _, d := range space.Dims {
		if d.Name != tuning.Network {
			continue
		}
		own, ownOK := src.Arch.FrontEnd()
		out = map[string]model.Arch{}
		for _, name := range d.Choices {
			spec, err := model.LoadSpec(name)
			if err != nil {
				return nil, invalidf("search space %s: network %q: %v", space.Name, name, err)
			}
			s, err := src.WithModel(spec)
			if err != nil {
				return nil, invalidf("search space %s: network %q does not fit %s: %v", space.Name, name, src.Name, err)
			}
			f, ok := s.Arch.FrontEnd()
			if ok != ownOK || (ok && fmt.Sprint(f) != fmt.Sprint(own)) {
				return nil, invalidf("search space %s: network %q reads its inputs through another front end than %s: every network of a search must share --model's (a ScatterNet layer with the same settings, or none)",
					space.Name, name, src.Arch.Name)
			}
			out[name] = s.Arch
		}
	}
	return out, nil
}

// spendingLayer returns the type of a privacy-spending layer of arch or
// of one of networks (dpsgd.Stages: a layer that estimates something of
// the training data before training, such as datanorm), "" when none has
// one: what a job refuses whose runs cannot count that estimate.
func spendingLayer(arch model.Arch, networks map[string]model.Arch) string {
	if st := dpsgd.Stages(arch); len(st) > 0 {
		return st[0].Type
	}
	for _, name := range slices.Sorted(maps.Keys(networks)) {
		if st := dpsgd.Stages(networks[name]); len(st) > 0 {
			return st[0].Type
		}
	}
	return ""
}
