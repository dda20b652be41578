package model

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"strconv"

	"github.com/dptune/dptune/model/onnxpb"
	"github.com/dptune/dptune/model/scatter"
)

// maxScatterONNXValues bounds the constants of a scatter layer's ONNX
// nodes (float32 values): 2^28, 1 GiB, half of the 2 GiB a protobuf
// message may hold.
const maxScatterONNXValues = 1 << 28

// onnx writes the scattering transform of package model/scatter (kymatio's
// Scattering2D of order 2: Bruna & Mallat, "Invariant Scattering
// Convolution Networks", IEEE TPAMI 2013; Oyallon & Mallat, CVPR 2015;
// Andreux et al., "Kymatio", JMLR 2020) as standard ONNX operators that
// compute what scatter.Transform computes, step for step, in the Fourier
// domain:
//
//   - The reflection padding and the 2-D DFT of the padded image are one
//     linear map of each image channel x (h×w): X = A·x·Bᵀ with the complex
//     matrices A = F_M·P_rows and B = F_N·P_cols (F the DFT matrix, P the
//     0/1 padding matrix), two MatMul nodes.
//   - Each wavelet ψ_{j,θ} is a fixed real Fourier-domain weight (kymatio
//     stores the real part of the filters' DFT), multiplied elementwise
//     (Mul) with the spectrum.
//   - Subsampling by 2^j in the Fourier domain (the mean of the aliases)
//     followed by the inverse DFT is the inverse DFT sampled every 2^j
//     points: two MatMul nodes with the rectangular matrices
//     V[r, a] = exp(2πi·r·2^j·a/M)/M (and likewise for the columns), the
//     1/(M·N) of the inverse DFT included.
//   - The complex modulus is Sqrt(re·re + im·im): Split, Mul, Add, Sqrt.
//   - The second order takes the DFT of each first-order modulus at its
//     resolution 2^j1 (MatMul by DFT matrices), the wavelets of the second
//     order at that resolution, and the same subsampled inverse.
//   - The low-pass φ, the subsampling to 2^J, the real part of the inverse
//     DFT and the unpadding are, for a real signal U, one separable real
//     map S = G·U·Hᵀ (scatter's dense low-pass: φ is an isotropic
//     Gaussian), two MatMul nodes; for S0 the padding is folded into G and
//     H.
//
// Complex values travel as real tensors with the real and imaginary parts
// side by side in the last axis ([…, r, 2c] for an r×c array), so that a
// complex matrix on the right is one real MatMul with the block matrix
// [[Re Q, Im Q], [−Im Q, Re Q]]; between the row and the column transforms
// the last two axes are swapped (Reshape, Transpose, Reshape), so that
// every constant multiplies from the right. The DFT is written as MatMul
// rather than ONNX's DFT operator because a MatMul by a precomputed
// matrix is exactly the unnormalised DFT, runs in every ONNX runtime, and
// for these short non-power-of-two lengths (36, 40) is as fast as any
// DFT kernel; spatial convolution with the equivalent M×N kernels under
// circular padding would cost several times more.
//
// The output is laid out as the transform's: input channel i gives
// channels i·K … i·K + K − 1 (K = 1 + J·L + L²·J(J−1)/2) in kymatio's
// order S0, S1(j, θ), S2(j1, θ1, j2, θ2), each (M/2^J − 2)×(N/2^J − 2).
// The constants are computed in float64 (as scatter computes) and stored
// as float32, so ONNX Runtime's float32 arithmetic agrees with
// scatter.Transform to about 1e-6 relative.
func (p ScatterSpec) onnx(g *onnxGraph, l Layer, in string) (string, error) {
	s, err := scatter.New(l.InH, l.InW, p.J, p.L)
	if err != nil {
		return "", err
	}
	b := s.Bank()
	if v := scatterONNXValues(b); v > maxScatterONNXValues {
		return "", fmt.Errorf("its filter bank as ONNX constants would be %d values, more than %d", v, maxScatterONNXValues)
	}
	e := &scatterONNX{g: g, name: l.Name, s: s, b: b, consts: map[string]string{}}
	return e.build(in), nil
}

// scatterONNXValues is the number of float32 constants a scatter layer's
// ONNX nodes hold: the wavelets (2·L·m·n per scale and resolution: each
// transposed and repeated for the real and imaginary parts), the DFT
// matrices (forward and subsampled inverse, 2m×2m/k as real blocks) and
// the low-pass matrices.
func scatterONNXValues(b scatter.Bank) int64 {
	J, L := int64(b.J), int64(b.L)
	M, N := int64(b.M), int64(b.N)
	v := 2*int64(b.W)*N + 4*int64(b.H)*M + int64(b.OH*b.H+b.W*b.OW) // input DFT, S0
	for j1 := range J {
		m, n := M>>j1, N>>j1
		v += 2*L*M*N + 4*(M*M+N*N)>>j1 + int64(b.OH)*m + n*int64(b.OW) // first order, its low-pass
		if j1+1 < J {
			v += 2*n*n + 4*m*m // the forward DFT of U1
		}
		for j2 := j1 + 1; j2 < J; j2++ {
			v += 2*L*m*n + 4*(m*m+n*n)>>(j2-j1)
		}
	}
	return v
}

// scatterONNX writes one scatter layer's nodes.
type scatterONNX struct {
	g      *onnxGraph
	name   string
	s      *scatter.Scattering
	b      scatter.Bank
	consts map[string]string // constant key → initializer name
}

// build adds the nodes of the transform of in ([N, C, H, W]) and returns
// the name of its output, [N, C·K, OH, OW].
func (e *scatterONNX) build(in string) string {
	b := e.b
	J, L, M, N := b.J, b.L, b.M, b.N
	g := e.g

	// S0 = x ⋆ φ, subsampled: the padding folded into the low-pass.
	gt0, ht0 := e.s.Lowpass(0)
	gPad := transpose(foldRows(gt0, b.OH, b.RowSource, b.H), b.H, b.OH) // G·P_rows, OH×H
	hPad := foldRows(ht0, b.OW, b.ColSource, b.W)                       // (H·P_cols)ᵀ, W×OW
	s0 := g.node("MatMul", e.name+"_s0", []string{in, e.constant("s0.h", []int{b.W, b.OW}, hPad)})
	s0 = g.node("MatMul", e.name+"_s0", []string{e.constant("s0.g", []int{b.OH, b.H}, gPad), s0})
	outs := []string{e.unsqueeze(s0, 2)}

	// X = A·x·Bᵀ, kept transposed: [N, C, N_pad, 2M].
	colDFT := paddedDFT(N, b.ColSource, b.W) // W×N: (F_N·P_cols)ᵀ
	rowDFT := paddedDFT(M, b.RowSource, b.H) // H×M: (F_M·P_rows)ᵀ
	x := g.node("MatMul", e.name+"_dft", []string{in, e.constant("dft.cols", []int{b.W, 2 * N}, sideBySide(colDFT, b.W, N))})
	x = e.swap(x, 4, b.H, N)
	x = g.node("MatMul", e.name+"_dft", []string{x, e.constant("dft.rows", []int{2 * b.H, 2 * M}, block(rowDFT, b.H, M))})
	x = e.unsqueeze(x, 2) // [N, C, 1, N_pad, 2M]

	var s2 []string
	for j1 := range J {
		// U1 = |x ⋆ ψ_{j1,θ}| at resolution 2^j1, all θ at once.
		psi := make([][]float64, L)
		for t := range psi {
			psi[t] = b.Psi[j1*L+t][0]
		}
		z := g.node("Mul", e.name+"_psi", []string{x, e.constant("psi.j"+strconv.Itoa(j1), []int{L, N, 2 * M}, transposedFilters(psi, M, N))})
		u1 := e.modulus(e.inverse(z, 5, M, N, 1<<j1)) // [N, C, L, M1, N1]
		m1, n1 := M>>j1, N>>j1
		outs = append(outs, e.lowpass(u1, j1))
		if j1+1 >= J {
			continue
		}
		spec := e.unsqueeze(e.forward(u1, 5, m1, n1), 3) // [N, C, L, 1, N1, 2M1]
		var per []string
		for j2 := j1 + 1; j2 < J; j2++ {
			for t := range psi {
				psi[t] = b.Psi[j2*L+t][j1]
			}
			key := "psi.j" + strconv.Itoa(j2) + ".r" + strconv.Itoa(j1)
			z := g.node("Mul", e.name+"_psi", []string{spec, e.constant(key, []int{L, n1, 2 * m1}, transposedFilters(psi, m1, n1))})
			u2 := e.modulus(e.inverse(z, 6, m1, n1, 1<<(j2-j1))) // [N, C, L, L, M2, N2]
			per = append(per, e.lowpass(u2, j2))
		}
		s := per[0]
		if len(per) > 1 {
			s = g.node("Concat", e.name+"_s2", per, attrInt("axis", 3))
		}
		s2 = append(s2, g.node("Reshape", e.name+"_s2", []string{s, g.int64s(e.name+"_shape", 0, 0, -1, int64(b.OH), int64(b.OW))}))
	}
	all := g.node("Concat", e.name+"_s", append(outs, s2...), attrInt("axis", 2)) // [N, C, K, OH, OW]
	return g.node("Reshape", e.name, []string{all, g.int64s(e.name+"_shape", 0, -1, int64(b.OH), int64(b.OW))})
}

// constant adds (once per key) a float32 initializer named by the layer
// and key, from float64 values.
func (e *scatterONNX) constant(key string, shape []int, v []float64) string {
	if name, ok := e.consts[key]; ok {
		return name
	}
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	name := e.g.constant(e.name+"."+key, shape, f)
	e.consts[key] = name
	return name
}

// unsqueeze inserts an axis of size 1 at axis.
func (e *scatterONNX) unsqueeze(x string, axis int) string {
	return e.g.node("Unsqueeze", e.name+"_unsqueeze", []string{x, e.g.int64s(e.name+"_axes", int64(axis))})
}

// swap turns x, a complex r×c array per leading index side by side
// ([…, r, 2c], rank axes), into its transpose, [… , c, 2r].
func (e *scatterONNX) swap(x string, rank, r, c int) string {
	g := e.g
	lead := make([]int64, rank-2)
	split := g.int64s(e.name+"_shape", append(lead, int64(r), 2, int64(c))...)
	x = g.node("Reshape", e.name+"_split", []string{x, split})
	perm := make([]int, rank+1)
	for i := range perm {
		perm[i] = i
	}
	perm[rank-2], perm[rank] = rank, rank-2
	x = g.node("Transpose", e.name+"_swap", []string{x}, attrInts("perm", perm...))
	joined := g.int64s(e.name+"_shape", append(lead, int64(c), int64(2*r))...)
	return g.node("Reshape", e.name+"_join", []string{x, joined})
}

// forward returns the 2-D DFT of the real u ([…, m, n], rank axes),
// transposed: […, n, 2m].
func (e *scatterONNX) forward(u string, rank, m, n int) string {
	g := e.g
	y := g.node("MatMul", e.name+"_dft", []string{u, e.constant("dft"+strconv.Itoa(n)+".top", []int{n, 2 * n}, sideBySide(dftMatrix(n), n, n))})
	y = e.swap(y, rank, m, n)
	return g.node("MatMul", e.name+"_dft", []string{y, e.constant("dft"+strconv.Itoa(m)+".block", []int{2 * m, 2 * m}, block(dftMatrix(m), m, m))})
}

// inverse returns, for the transposed spectrum z ([…, n, 2m], rank axes)
// of an m×n signal, its inverse DFT (numpy's ifft2, with its 1/(m·n))
// sampled every k points, […, m/k, 2n/k]: kymatio's subsample_fourier by k
// followed by ifft2.
func (e *scatterONNX) inverse(z string, rank, m, n, k int) string {
	g := e.g
	y := g.node("MatMul", e.name+"_idft", []string{z, e.inverseConst(m, k)})
	y = e.swap(y, rank, n, m/k)
	return g.node("MatMul", e.name+"_idft", []string{y, e.inverseConst(n, k)})
}

// inverseConst is the real block form of sampledInverseDFT(m, k).
func (e *scatterONNX) inverseConst(m, k int) string {
	key := "idft" + strconv.Itoa(m) + ".k" + strconv.Itoa(k)
	if name, ok := e.consts[key]; ok {
		return name
	}
	return e.constant(key, []int{2 * m, 2 * (m / k)}, block(sampledInverseDFT(m, k), m, m/k))
}

// modulus returns |z| of the complex z ([…, r, 2c], real and imaginary
// parts side by side): Sqrt(re·re + im·im), […, r, c].
func (e *scatterONNX) modulus(z string) string {
	g := e.g
	re, im := g.fresh(e.name+"_re"), g.fresh(e.name+"_im")
	g.nodes = append(g.nodes, &onnxpb.NodeProto{OpType: "Split", Name: re, Input: []string{z}, Output: []string{re, im},
		Attribute: []*onnxpb.AttributeProto{attrInt("axis", -1)}})
	sum := g.node("Add", e.name+"_abs2", []string{g.node("Mul", e.name+"_re2", []string{re, re}), g.node("Mul", e.name+"_im2", []string{im, im})})
	return g.node("Sqrt", e.name+"_abs", []string{sum})
}

// lowpass returns S = G·U·Hᵀ of the real u at resolution 2^res: […, OH, OW].
func (e *scatterONNX) lowpass(u string, res int) string {
	b := e.b
	m, n := b.M>>res, b.N>>res
	key := "phi.r" + strconv.Itoa(res)
	gk, hk := key+".g", key+".ht"
	if _, ok := e.consts[gk]; !ok {
		gt, ht := e.s.Lowpass(res)
		e.constant(gk, []int{b.OH, m}, transpose(gt, m, b.OH))
		e.constant(hk, []int{n, b.OW}, ht)
	}
	y := e.g.node("MatMul", e.name+"_phi", []string{u, e.consts[hk]})
	return e.g.node("MatMul", e.name+"_phi", []string{e.consts[gk], y})
}

// dftMatrix returns the n×n DFT matrix F[k, x] = exp(−2πi·k·x/n) (numpy's
// fft), symmetric.
func dftMatrix(n int) []complex128 {
	f := make([]complex128, n*n)
	for k := range n {
		for x := range n {
			f[k*n+x] = unit(-(k * x % n), n)
		}
	}
	return f
}

// paddedDFT returns (F_n·P)ᵀ, side×n, for the padding P that copies
// source[i] to padded index i: row s is Σ_{i: source[i] = s} F[·, i].
func paddedDFT(n int, source []int, side int) []complex128 {
	f := make([]complex128, side*n)
	for i, s := range source {
		for k := range n {
			f[s*n+k] += unit(-(k * i % n), n)
		}
	}
	return f
}

// sampledInverseDFT returns the m×(m/k) matrix V[r, a] = exp(2πi·r·k·a/m)/m:
// y·V is the inverse DFT along y's last axis sampled every k points.
func sampledInverseDFT(m, k int) []complex128 {
	c := m / k
	v := make([]complex128, m*c)
	for r := range m {
		for a := range c {
			v[r*c+a] = unit(r*k*a%m, m) / complex(float64(m), 0)
		}
	}
	return v
}

// unit is exp(2πi·p/n).
func unit(p, n int) complex128 {
	s, c := math.Sincos(2 * math.Pi * float64(p) / float64(n))
	return complex(c, s)
}

// sideBySide returns the r×2c real matrix [Re q | Im q] of the complex r×c
// q: a real row vector x times it is x·q, parts side by side.
func sideBySide(q []complex128, r, c int) []float64 {
	out := make([]float64, r*2*c)
	for i := range r {
		for j := range c {
			v := q[i*c+j]
			out[i*2*c+j], out[i*2*c+c+j] = real(v), imag(v)
		}
	}
	return out
}

// block returns the 2r×2c real matrix [[Re q, Im q], [−Im q, Re q]] of the
// complex r×c q: [re | im]·block = [Re(z·q) | Im(z·q)] for z = re + i·im.
func block(q []complex128, r, c int) []float64 {
	out := make([]float64, 4*r*c)
	w := 2 * c
	for i := range r {
		for j := range c {
			v := q[i*c+j]
			out[i*w+j], out[i*w+c+j] = real(v), imag(v)
			out[(r+i)*w+j], out[(r+i)*w+c+j] = -imag(v), real(v)
		}
	}
	return out
}

// transposedFilters returns the real m×n Fourier-domain filters fs, each
// transposed and repeated for the real and imaginary parts: [len(fs), n, 2m].
func transposedFilters(fs [][]float64, m, n int) []float64 {
	out := make([]float64, 0, len(fs)*n*2*m)
	for _, f := range fs {
		for c := range n {
			for range 2 {
				for r := range m {
					out = append(out, f[r*n+c])
				}
			}
		}
	}
	return out
}

// transpose returns the c×r transpose of the r×c row-major a.
func transpose(a []float64, r, c int) []float64 {
	t := make([]float64, len(a))
	for i := range r {
		for j := range c {
			t[j*r+i] = a[i*c+j]
		}
	}
	return t
}

// foldRows returns Pᵀ·a for the c-column row-major a whose row i is padded
// index i and the padding P copies image index source[i] there: the rows
// summed onto the side image indices they copy, side×c.
func foldRows(a []float64, c int, source []int, side int) []float64 {
	out := make([]float64, side*c)
	for i, s := range source {
		for j := range c {
			out[s*c+j] += a[i*c+j]
		}
	}
	return out
}

// frontEndMetadata describes a network's scatter front end for an
// export's metadata: its J and L, input and output shapes (JSON arrays,
// [C, H, W]) and the transform's definition; nil for a network without one.
func frontEndMetadata(a Arch) map[string]string {
	f, ok := a.FrontEnd()
	if !ok {
		return nil
	}
	js := func(v ...int) string { b, _ := json.Marshal(v); return string(b) }
	return map[string]string{
		"scatter_j":            strconv.Itoa(f.Spec.J),
		"scatter_l":            strconv.Itoa(f.Spec.L),
		"scatter_input_shape":  js(f.C, f.H, f.W),
		"scatter_output_shape": js(f.OutC, f.OutH, f.OutW),
		"scatter_transform":    "kymatio Scattering2D(J, shape=(H, W), L, max_order=2) of each input channel; channel i·K+k is channel k of input channel i",
	}
}

// withFrontEnd returns metadata with a's frontEndMetadata added under the
// keys metadata does not set (a copy; metadata itself is not modified).
func withFrontEnd(metadata map[string]string, a Arch) map[string]string {
	f := frontEndMetadata(a)
	if f == nil {
		return metadata
	}
	out := make(map[string]string, len(metadata)+len(f))
	maps.Copy(out, f)
	maps.Copy(out, metadata)
	return out
}
