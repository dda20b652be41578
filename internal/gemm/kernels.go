package gemm

import (
	"fmt"
	"os"
	"sync/atomic"
)

// The kernels Mul can use, as indices into kernels.
const (
	useGo int32 = iota
	useAVX2
	useAVX512
)

// active is the kernel Mul uses.
var active atomic.Int32

// kernels names every kernel from the slowest and says whether this machine
// and build can run it.
var kernels = [...]struct {
	name      string
	available bool
}{useGo: {"go", true}, useAVX2: {"avx2-fma", haveAVX2}, useAVX512: {"avx512", haveAVX512}}

func init() {
	for i, kn := range kernels {
		if kn.available {
			active.Store(int32(i))
		}
	}
	if name := os.Getenv("DPTUNE_GEMM_KERNEL"); name != "" {
		if _, err := SetKernel(name); err != nil {
			envErr = fmt.Errorf("DPTUNE_GEMM_KERNEL: %w", err)
		}
	}
}

// envErr is why DPTUNE_GEMM_KERNEL could not be followed (nil when it
// was, or is unset); Mul then uses the fastest kernel.
var envErr error

// EnvError says why the kernel DPTUNE_GEMM_KERNEL names is not the one
// Mul uses (an unknown name, or a kernel this machine or build cannot
// run), nil when it is or the variable is unset: a program should refuse
// to go on, so that a side-by-side comparison never quietly measures
// another kernel.
func EnvError() error { return envErr }

// Kernel names the micro-kernel Mul uses: "avx512", "avx2-fma" or "go".
func Kernel() string { return kernels[active.Load()].name }

// Kernels names the kernels this machine and build can run, the fastest
// last (the one Mul uses unless told otherwise).
func Kernels() []string {
	var names []string
	for _, kn := range kernels {
		if kn.available {
			names = append(names, kn.name)
		}
	}
	return names
}

// SetKernel makes Mul use the named kernel ("avx2" stands for "avx2-fma")
// and returns the name of the one it used before. It fails, changing
// nothing, for an unknown name or a kernel this machine or build cannot
// run. It is meant for tests and benchmarks that compare kernels; calls of
// Mul that run meanwhile use either kernel.
func SetKernel(name string) (prev string, err error) {
	if name == "avx2" {
		name = kernels[useAVX2].name
	}
	for i, kn := range kernels {
		if kn.name != name {
			continue
		}
		if !kn.available {
			return Kernel(), fmt.Errorf("gemm: kernel %q cannot run here (available: %v)", name, Kernels())
		}
		return kernels[active.Swap(int32(i))].name, nil
	}
	return Kernel(), fmt.Errorf("gemm: unknown kernel %q (available: %v)", name, Kernels())
}
