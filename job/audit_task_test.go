package job

import (
	"encoding/json"
	"testing"

	"github.com/dptune/dptune/audit"
	"github.com/dptune/dptune/data"
)

// A block of an audit's trials carries the data to the runner's workers
// exactly when its game trains on real data (audit.Game.OnData, given a
// dataset): every such game, not only the natural one, so that a worker
// never plays the data-free canary in its place.
func TestAuditTaskCarriesTheDataOfAGameOnData(t *testing.T) {
	src := Source{Name: "mnist", NominalN: 100, Load: func() (*data.Dataset, *data.Dataset, error) { return nil, nil, nil }}
	for _, name := range audit.Names(nil) {
		g, _ := audit.Lookup(name)
		task, err := auditTask(AuditSpec{Protocol: name, Data: src})([]int{0, 1})
		if err != nil {
			t.Fatal(err)
		}
		var in auditInput
		if err := json.Unmarshal(task.Input, &in); err != nil {
			t.Fatal(err)
		}
		if want := g.OnData(true); (in.Data != nil) != want || (in.Arch != nil) != want {
			t.Errorf("%s: data %v, network %v; the game trains on real data: %v", name, in.Data != nil, in.Arch != nil, want)
		}
	}
}
