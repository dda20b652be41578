package job

import (
	"errors"
	"strings"
	"testing"

	"github.com/dptune/dptune/tuning"
)

// A tuning's request is refused before its data is read, with an error
// that wraps ErrInvalid and names the flag at fault.
func TestTuneRequestRefusedBeforeData(t *testing.T) {
	noData := func() (Source, error) {
		t.Error("the data was read")
		return Source{}, errors.New("no data")
	}
	for _, c := range []struct {
		r    TuneRequest
		want string
	}{
		{TuneRequest{Tuner: "bayes"}, `unknown --tuner "bayes"`},
		{TuneRequest{Tuner: tuning.Default, Given: Given{"clients": true}}, "--clients is not a --tuner " + tuning.Default + " option"},
		{TuneRequest{Tuner: tuning.Default, Clipping: ClippingSettings{Rule: "clipped"}}, `--clipping "clipped": want flat or automatic`},
		{TuneRequest{Tuner: tuning.Default, Clipping: ClippingSettings{Rule: "flat"}, Given: Given{"partitions": true}}, "--partitions is a --tuner "},
		{TuneRequest{Tuner: "randomstop", Clipping: ClippingSettings{Rule: "flat"}, Given: Given{"default-weight": true}}, "--default-weight needs --include-default"},
		{TuneRequest{Tuner: "randomstop", Clipping: ClippingSettings{Rule: "flat"}, Given: Given{"selection-share": true}}, "--selection-share 0 is outside (0, 1)"},
		{TuneRequest{Tuner: tuning.Default, Clipping: ClippingSettings{Rule: "flat"}, DefaultSource: "mine"}, "--default-source needs --default-settings"},
		{TuneRequest{Resume: "somewhere", Given: Given{"resume": true, "epsilon": true}}, "--resume takes no other flag: the tuning continues with the settings it kept (drop --epsilon)"},
	} {
		_, err := c.r.Spec(noData)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q wrapping ErrInvalid", c.r, err, c.want)
		}
	}
}

// The clients of a vote this machine starts hold the curator's own ε, δ
// and colluding clients, and its data's dataset, directory and feature
// cache.
func TestVoteClientArgs(t *testing.T) {
	v := VoteSpec{Epsilon: 2.5, Delta: 3e-7, Colluding: 2}
	v.Data.Input.Dataset, v.Data.Dir, v.Data.Features.Dir = "cifar10", "/data/c", DefaultFeatureCache()
	got := strings.Join(VoteClientArgs(v, "127.0.0.1:1", 2, 5, "certs"), " ")
	want := "vote client --server 127.0.0.1:1 --dataset cifar10 --part 2/5 --tls-cert certs/client-2.pem --tls-key certs/client-2.key --ca certs/ca.pem --max-epsilon 2.5 --max-delta 3e-07 --colluding 2 --data-dir /data/c"
	if got != want {
		t.Errorf("args\n%s\nwant\n%s", got, want)
	}
}
