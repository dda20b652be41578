package model

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// readSafetensors is an independent reader: Python's json and struct, as
// Debian ships them. It prints {key: [values…]} and the metadata.
const readSafetensors = `
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
head = json.loads(b[8:8 + n])
meta = head.pop("__metadata__", {})
data = b[8 + n:]
out = {}
for k, v in head.items():
    assert v["dtype"] == "F32", v
    lo, hi = v["data_offsets"]
    count = 1
    for s in v["shape"]:
        count *= s
    assert hi - lo == 4 * count, (k, v)
    out[k] = {"shape": v["shape"], "values": list(struct.unpack("<%df" % count, data[lo:hi]))}
assert max(v["data_offsets"][1] for v in head.values()) == len(data)
json.dump({"tensors": out, "metadata": meta}, sys.stdout)
`

// The safetensors file read back by Python equals the network's parameters
// and buffers exactly, under torch.nn.Sequential's keys, with the metadata.
func TestSafetensorsReadByPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	arch, err := NewArch(ScatterCNNMNIST, 1, 28, 28, 10)
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(arch, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n.Buffers {
		n.Buffers[i] = float32(i)/7 + 0.1
	}
	var buf bytes.Buffer
	if err := n.WriteSafetensors(&buf, map[string]string{"epsilon": "3", "spec": "{}"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, "-c", readSafetensors, path).Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var got struct {
		Tensors map[string]struct {
			Shape  []int     `json:"shape"`
			Values []float64 `json:"values"`
		} `json:"tensors"`
		Metadata map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	// scatter-cnn-mnist: 0 scatter, 1 datanorm, 2 conv, 3 tanh, 4 conv,
	// 5 tanh, 6 flatten, 7 linear, 8 tanh, 9 linear.
	want := map[string]struct {
		src []float32
		t   Tensor
	}{}
	keys, err := n.SequentialKeys()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range n.Tensors {
		want[keys[tt.Name]] = struct {
			src []float32
			t   Tensor
		}{n.Params, tt}
	}
	for _, tt := range n.BufferTensors {
		want[keys[tt.Name]] = struct {
			src []float32
			t   Tensor
		}{n.Buffers, tt}
	}
	for _, k := range []string{"1.mean", "1.var", "2.weight", "2.bias", "4.weight", "4.bias", "7.weight", "7.bias", "9.weight", "9.bias"} {
		if _, ok := want[k]; !ok {
			t.Errorf("no tensor %s: keys %v", k, keys)
		}
	}
	if len(got.Tensors) != len(want) {
		t.Fatalf("python read %d tensors, want %d", len(got.Tensors), len(want))
	}
	for k, w := range want {
		g := got.Tensors[k]
		if len(g.Values) != w.t.Size() || len(g.Shape) != len(w.t.Shape) {
			t.Fatalf("%s: %d values of shape %v, want %v", k, len(g.Values), g.Shape, w.t.Shape)
		}
		for i, v := range g.Values {
			if v != float64(w.src[w.t.Offset+i]) {
				t.Fatalf("%s[%d] = %v, want %v", k, i, v, w.src[w.t.Offset+i])
			}
		}
	}
	if got.Metadata["epsilon"] != "3" || got.Metadata["spec"] != "{}" {
		t.Errorf("metadata %v", got.Metadata)
	}
	// The ScatterNet front end's filter bank is fixed: its parameters
	// stand in the metadata instead of weights.
	for k, v := range map[string]string{"scatter_j": "2", "scatter_l": "8", "scatter_input_shape": "[1,28,28]", "scatter_output_shape": "[81,7,7]"} {
		if got.Metadata[k] != v {
			t.Errorf("metadata %s = %q, want %q", k, got.Metadata[k], v)
		}
	}
}
