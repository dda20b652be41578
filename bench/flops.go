package bench

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/dptune/dptune/internal/gemm"
	"github.com/dptune/dptune/model"
)

// TrainingFLOPs is the floating-point operations of one example's training
// step in the GEMMs of layers (2 per multiply-add): the forward pass, the
// backward pass to every layer's input but the first's, and the weight
// gradient — 3× the forward pass of every convolution and linear layer but
// the first, 2× for the first. It counts what a non-private step must do;
// DP-SGD's per-example gradients replace the weight-gradient GEMM with
// per-example ones of the same size, so the count is the same for both,
// and GFLOP/s compare the two directly. Elementwise work (activations,
// pooling, norms, im2col) is not counted.
func TrainingFLOPs(layers []model.Layer) float64 {
	var f float64
	first := true
	for _, l := range layers {
		macs := float64(l.MACs())
		if macs == 0 {
			continue
		}
		passes := 3.0
		if first {
			passes = 2
		}
		f += 2 * macs * passes
		first = false
	}
	return f
}

// PeakGFLOPs is the float32 FMA peak of the cores this process runs on, in
// GFLOP/s: GOMAXPROCS × the clock ("cpu MHz" of /proc/cpuinfo) × the flops
// per cycle of two FMA units as wide as the GEMM kernel's vectors, each a
// multiply and an add: 32 on "avx2-fma" (two 8-wide units, AMD Zen and
// Intel since Haswell), 64 on "avx512" (two 16-wide units, AMD Zen 5 and
// Xeons with two 512-bit FMA units; where 512-bit FMAs run as two halves,
// Zen 4, or on one unit the peak is half that and fractions of it read
// low). It is 0 when the clock cannot be read or the kernel is neither.
func PeakGFLOPs() float64 {
	perCycle := map[string]float64{"avx2-fma": 32, "avx512": 64}[gemm.Kernel()]
	if perCycle == 0 {
		return 0
	}
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "cpu MHz" {
			mhz, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0
			}
			return float64(runtime.GOMAXPROCS(0)) * mhz * 1e-3 * perCycle
		}
	}
	return 0
}
