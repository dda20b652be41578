package model

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// SequentialKeys maps each parameter and buffer tensor of n (model.Tensor
// names such as "conv1.weight", "dn1.mean") to its key in the state_dict
// of the equivalent torch.nn.Sequential, whose module i is the spec's
// layer i: "0.weight", "1.mean", ….
func (n *Net) SequentialKeys() (map[string]string, error) {
	layers, _, err := n.Arch.Layers()
	if err != nil {
		return nil, err
	}
	index := map[string]int{}
	for i, l := range layers {
		index[l.Name] = i
	}
	keys := map[string]string{}
	for _, t := range append(append([]Tensor(nil), n.Tensors...), n.BufferTensors...) {
		dot := strings.LastIndexByte(t.Name, '.')
		i, ok := index[t.Name[:max(dot, 0)]]
		if dot < 0 || !ok {
			return nil, fmt.Errorf("model: tensor %q names no layer of %s", t.Name, n.Arch.Name)
		}
		keys[t.Name] = strconv.Itoa(i) + t.Name[dot:]
	}
	return keys, nil
}

// WriteSafetensors writes n's parameters and buffers to w in the
// safetensors format (Hugging Face's: an 8-byte little-endian header
// length, a JSON header naming each tensor's dtype, shape and byte range,
// then the little-endian data), each tensor of dtype F32 under its
// torch.nn.Sequential state_dict key (SequentialKeys), in the order of n's
// tensors, then buffers. metadata goes in the header's "__metadata__"
// (string values only, as the format requires), with, for a network with
// a ScatterNet front end (whose filters are fixed, not stored), the
// transform's J, L and input and output shapes ("scatter_j", "scatter_l",
// "scatter_input_shape", "scatter_output_shape": frontEndMetadata) where
// metadata does not set those keys. The header is padded with spaces to a
// multiple of 8 bytes.
func (n *Net) WriteSafetensors(w io.Writer, metadata map[string]string) error {
	keys, err := n.SequentialKeys()
	if err != nil {
		return err
	}
	type entry struct {
		DType   string `json:"dtype"`
		Shape   []int  `json:"shape"`
		Offsets [2]int `json:"data_offsets"`
	}
	// The header is written by hand so that tensors keep their order.
	metadata = withFrontEnd(metadata, n.Arch)
	var head bytes.Buffer
	head.WriteString("{")
	if len(metadata) > 0 {
		m, err := json.Marshal(metadata)
		if err != nil {
			return err
		}
		head.WriteString(`"__metadata__":`)
		head.Write(m)
	}
	var body []float32
	add := func(t Tensor, src []float32) error {
		e := entry{DType: "F32", Shape: t.Shape, Offsets: [2]int{4 * len(body), 4 * (len(body) + t.Size())}}
		if e.Shape == nil {
			e.Shape = []int{}
		}
		k, err := json.Marshal(keys[t.Name])
		if err != nil {
			return err
		}
		v, err := json.Marshal(e)
		if err != nil {
			return err
		}
		if head.Len() > 1 {
			head.WriteString(",")
		}
		head.Write(k)
		head.WriteString(":")
		head.Write(v)
		body = append(body, src[t.Offset:t.Offset+t.Size()]...)
		return nil
	}
	for _, t := range n.Tensors {
		if err := add(t, n.Params); err != nil {
			return err
		}
	}
	for _, t := range n.BufferTensors {
		if err := add(t, n.Buffers); err != nil {
			return err
		}
	}
	head.WriteString("}")
	for head.Len()%8 != 0 {
		head.WriteByte(' ')
	}
	out := make([]byte, 8, 8+head.Len()+4*len(body))
	binary.LittleEndian.PutUint64(out, uint64(head.Len()))
	out = append(out, head.Bytes()...)
	for _, f := range body {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(f))
	}
	_, err = w.Write(out)
	return err
}
