package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Bad input for the default among the candidates and the selection share
// ends with one line and status 2 before any work: a share outside (0, 1)
// or one the selection cannot meet (named), the default with no settings
// given and none published (tb-mnist has none on MNIST), a weight or
// settings without --include-default, malformed settings, and a tuner that
// takes neither.
func TestTuneSplitBadInputExit2(t *testing.T) {
	dir := t.TempDir()
	space := filepath.Join(dir, "space.json")
	os.WriteFile(space, []byte(`{"name": "two", "dims": [{"name": "learning_rate", "values": [0.5, 1]}]}`), 0o644)
	common := []string{"tune", "--tuner", "randomstop", "--model", "tb-mnist", "--space", space, "--epochs", "1", "--epsilon", "2", "--out", filepath.Join(dir, "out")}
	good := "--default-settings=batch_size=64,epochs=1,learning_rate=0.5,momentum=0.9,clip_norm=1"
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"share 0":           {[]string{"--selection-share", "0"}, "outside (0, 1)"},
		"share 1":           {[]string{"--selection-share", "1"}, "outside (0, 1)"},
		"share 1.5":         {[]string{"--selection-share", "1.5"}, "outside (0, 1)"},
		"share negative":    {[]string{"--selection-share=-0.2"}, "outside (0, 1)"},
		"share infeasible":  {[]string{"--selection-share", "0.0001"}, "selection share 0.0001"},
		"no default":        {[]string{"--include-default"}, "no published settings"},
		"weight alone":      {[]string{"--default-weight", "0.5"}, "needs --include-default"},
		"settings alone":    {[]string{good, "--default-source", "x"}, "needs --include-default"},
		"no source":         {[]string{"--include-default", good}, "--default-source"},
		"bad settings":      {[]string{"--include-default", "--default-settings=batch_size=64,epochs=1", "--default-source", "x"}, "needs all of"},
		"momentum 1":        {[]string{"--include-default", "--default-settings=batch_size=64,epochs=1,learning_rate=0.5,momentum=1,clip_norm=1", "--default-source", "x"}, "momentum"},
		"weight 1":          {[]string{"--include-default", good, "--default-source", "x", "--default-weight", "1"}, "outside (0, 1)"},
		"weight 0":          {[]string{"--include-default", good, "--default-source", "x", "--default-weight", "0"}, "--default-weight 0 is outside (0, 1)"},
		"weight negative":   {[]string{"--include-default", good, "--default-source", "x", "--default-weight=-0.5"}, "outside (0, 1)"},
		"weight NaN":        {[]string{"--include-default", good, "--default-source", "x", "--default-weight", "NaN"}, "outside (0, 1)"},
		"grid weight 0":     {[]string{"--tuner", "grid", "--include-default", good, "--default-source", "x", "--default-weight", "0"}, "no weight"},
		"doubling weight 0": {[]string{"--tuner", "doubling", "--include-default", good, "--default-source", "x", "--default-weight", "0"}, "no weight"},
		"grid weight":       {[]string{"--tuner", "grid", "--include-default", good, "--default-source", "x", "--default-weight", "0.5"}, "no weight"},
		"gp default":        {[]string{"--tuner", "gp", "--include-default", good, "--default-source", "x"}, "cannot take the default"},
		"doubling weight":   {[]string{"--tuner", "doubling", "--include-default", good, "--default-source", "x", "--default-weight", "0.5"}, "no weight"},
		"doubling share":    {[]string{"--tuner", "doubling", "--selection-share", "0.2"}, "no selection share"},
		"vote share":        {[]string{"--tuner", "vote", "--selection-share", "0.2"}, "not a --tuner vote option"},
		"subsample 0":       {[]string{"--selection-share", "0.2", "--subsample", "0"}, "--subsample 0 is outside (0, 1]"},
		"subsample 2":       {[]string{"--selection-share", "0.2", "--subsample", "2"}, "outside (0, 1]"},
		"subsample alone":   {[]string{"--subsample", "0.5"}, "needs a selection share"},
		"vote subsample":    {[]string{"--tuner", "vote", "--subsample", "0.5"}, "not a --tuner vote option"},
		"recommended K":     {[]string{"--tuner", "recommended", "--mean-runs", "5"}, "--mean-runs is fixed by --tuner recommended"},
		"recommended share": {[]string{"--tuner", "recommended", "--selection-share", "0.5"}, "--selection-share is fixed by --tuner recommended"},
		"recommended val":   {[]string{"--tuner", "recommended", "--val-size", "500"}, "--val-size is fixed by --tuner recommended"},
	} {
		t.Run(name, func(t *testing.T) {
			expectExit2(t, 3*time.Second, c.want, append(append([]string{}, common...), c.args...)...)
		})
	}
}

// A small end-to-end tuning with the default among the candidates and a
// selection share: report.json gives the selection's and the final run's
// ε beside the total, and the released model is the final run's — the
// model's own record holds the final run's σ and its sampling rate on the
// whole training set (batch 50 of 600), not a selection run's (of 500).
func TestTuneSplitEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("trains")
	}
	data := writeMNISTDir(t, 600, 100, -1)
	dir := t.TempDir()
	space := filepath.Join(dir, "space.json")
	os.WriteFile(space, []byte(`{"name": "two", "dims": [{"name": "learning_rate", "values": [0.1, 0.3]}]}`), 0o644)
	out := filepath.Join(dir, "t")
	code, text := run(t, "tune", "--tuner", "grid", "--dataset", "mnist", "--data-dir", data, "--nominal-size", "600", "--model", "tb-mnist",
		"--space", space, "--epochs", "1", "--batch-size", "50", "--val-size", "100", "--epsilon", "4", "--seed", "3", "--out", out,
		"--include-default", "--default-settings=batch_size=50,epochs=1,learning_rate=0.5,momentum=0.5,clip_norm=1", "--default-source", "a test",
		"--selection-share", "0.25")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, text)
	}
	if !strings.Contains(text, "(3 candidates)") || !strings.Contains(text, "final run") || !strings.Contains(text, "selection ε = ") {
		t.Errorf("the output does not announce the default among 3 candidates, the final run and the components:\n%s", text)
	}
	var rep struct {
		Epsilon    float64 `json:"epsilon"`
		Components []struct {
			Name    string   `json:"name"`
			Epsilon *float64 `json:"epsilon"`
		} `json:"epsilon_components"`
		FinalSigma float64 `json:"final_noise_multiplier"`
		FinalQ     float64 `json:"final_sampling_rate"`
		Share      float64 `json:"selection_share"`
		Includes   bool    `json:"includes_default"`
		Baseline   *struct {
			Command string `json:"command"`
		} `json:"baseline"`
	}
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Epsilon > 4 || rep.Epsilon < 3.99 || rep.Share != 0.25 || !rep.Includes {
		t.Errorf("ε = %v, share %v, includes default %v", rep.Epsilon, rep.Share, rep.Includes)
	}
	if len(rep.Components) != 2 || rep.Components[0].Name != "selection" || rep.Components[1].Name != "final run" ||
		rep.Components[1].Epsilon == nil || *rep.Components[1].Epsilon > 3 || *rep.Components[1].Epsilon < 2.99 {
		t.Errorf("epsilon_components %+v, want selection and final run at (1 − 0.25)·4 = 3", rep.Components)
	}
	if rep.Baseline == nil || !strings.Contains(rep.Baseline.Command, "--lr 0.5 --momentum 0.5") {
		t.Errorf("baseline %+v, want the given default's command", rep.Baseline)
	}
	var meta struct {
		Hyper struct {
			Sigma float64 `json:"noise_multiplier"`
			Q     float64 `json:"sampling_rate"`
		} `json:"hyperparameters"`
	}
	mb, err := os.ReadFile(filepath.Join(out, "model.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(mb, &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Hyper.Sigma != rep.FinalSigma || meta.Hyper.Q != 50.0/600 || rep.FinalQ != 50.0/600 {
		t.Errorf("released model's run: σ = %v, q = %v; the final run's σ = %v, q = 50/600", meta.Hyper.Sigma, meta.Hyper.Q, rep.FinalSigma)
	}
}
