package data

import (
	"slices"
	"testing"
)

// The built-in datasets register themselves with their published sizes and
// shapes (LeCun et al. 1998; Krizhevsky 2009), listed MNIST first.
func TestRegistry(t *testing.T) {
	if got := Names(); !slices.Equal(got, []string{"mnist", "cifar10", "fashion-mnist"}) {
		t.Fatalf("Names() = %v, want [mnist cifar10 fashion-mnist]", got)
	}
	for _, c := range []struct {
		name                    string
		n, ch, h, w, classes    int
		model, space            string
		defaultDir, needsDirMsg bool
	}{
		{"mnist", 60000, 1, 28, 28, 10, "tb-mnist", "mnist-dphypo", true, false},
		{"cifar10", 50000, 3, 32, 32, 10, "tb-cifar10", "cifar10-dphypo", false, true},
		{"fashion-mnist", 60000, 1, 28, 28, 10, "tb-mnist", "mnist-dphypo", true, false},
	} {
		k, ok := Lookup(c.name)
		switch {
		case !ok:
			t.Errorf("%s is not registered", c.name)
		case k.NominalN != c.n || k.C != c.ch || k.H != c.h || k.W != c.w || k.Classes != c.classes:
			t.Errorf("%s: n=%d shape %d×%d×%d, %d classes; want n=%d %d×%d×%d, %d", c.name, k.NominalN, k.C, k.H, k.W, k.Classes, c.n, c.ch, c.h, c.w, c.classes)
		case k.Model != c.model || k.Space != c.space:
			t.Errorf("%s: model %q space %q, want %q %q", c.name, k.Model, k.Space, c.model, c.space)
		case (k.DefaultDir != nil) != c.defaultDir || (k.DirHelp != "") != c.needsDirMsg:
			t.Errorf("%s: default dir %v, dir help %q", c.name, k.DefaultDir != nil, k.DirHelp)
		}
	}
	if _, ok := Lookup("svhn"); ok {
		t.Error("Lookup found an unregistered dataset")
	}
	defer func() {
		if recover() == nil {
			t.Error("registering mnist twice did not panic")
		}
	}()
	Register(Named{Name: "mnist", Load: LoadMNIST})
}
