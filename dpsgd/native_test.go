package dpsgd

import (
	"strings"
	"testing"

	"github.com/dptune/dptune/model"
)

// Every layer type a spec may name has engine rules.
func TestEveryLayerTypeHasRules(t *testing.T) {
	for _, typ := range model.LayerTypes() {
		if _, ok := rules[typ]; !ok {
			t.Errorf("layer type %q has no engine rules", typ)
		}
	}
}

// Registering a type twice is a programming error: it panics.
func TestRegisterTwicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a second registration of relu did not panic")
		}
	}()
	register("relu", rules["relu"])
}

// NewEngine names the first layer whose type has no rules.
func TestNewEngineNamesLayerWithoutRules(t *testing.T) {
	net, err := model.NewZero(model.Arch{Spec: model.Spec{Name: "s", Layers: []model.LayerSpec{
		model.Flatten(), model.Linear(4), model.SiLU(), model.Linear(2)}}, C: 1, H: 2, W: 2, Classes: 2})
	if err != nil {
		t.Fatal(err)
	}
	saved := rules["silu"]
	delete(rules, "silu")
	defer func() { rules["silu"] = saved }()
	if _, err := NewEngine(net, 1); err == nil || !strings.Contains(err.Error(), `layer silu1: the native engine has no rules for layer type "silu"`) {
		t.Fatalf("NewEngine without silu rules: %v", err)
	}
}
