// Package scatter computes the 2-D scattering transform of order at most 2
// exactly as kymatio's Scattering2D does (kymatio 0.3.0 and its development
// version 0.4.0.dev0, commit 11552ed5, whose 2-D filter bank and algorithm
// are the same): the fixed, data-independent features that Tramèr & Boneh
// ("Differentially Private Learning Needs Better Features (or Much More
// Data)", ICLR 2021) train private linear models and small CNNs on.
//
// Sources: E. Oyallon and S. Mallat, "Deep Roto-Translation Scattering for
// Object Classification", CVPR 2015 (scattering networks as image
// features); J. Bruna and S. Mallat,
// "Invariant Scattering Convolution Networks", IEEE TPAMI 35(8), 2013 (the
// scattering transform, Section 2); and kymatio (M. Andreux et al.,
// "Kymatio: Scattering Transforms in Python", JMLR 21(60), 2020), files
// kymatio/scattering2d/filter_bank.py, core/scattering2d.py, utils.py and
// backend/numpy_backend.py, whose definitions are followed here.
//
// # What it computes
//
// For an h×w image x and the low-pass φ and wavelets ψ_{j,θ} (0 ≤ j < J,
// 0 ≤ θ < L), one input channel gives 1 + J·L + L²·J(J−1)/2 channels (81 for
// J = 2, L = 8) of ⌊h/2^J⌋×⌊w/2^J⌋ (7×7 for MNIST's 28×28, 8×8 for 32×32),
// in kymatio's order:
//
//	S0                  = x ⋆ φ                               channel 0
//	S1(j, θ)            = |x ⋆ ψ_{j,θ}| ⋆ φ                   channel 1 + j·L + θ
//	S2(j1, θ1, j2, θ2)  = ||x ⋆ ψ_{j1,θ1}| ⋆ ψ_{j2,θ2}| ⋆ φ   j2 > j1; channels from 1 + J·L on
//
// with S2 in the order of the loops over j1, θ1, j2, θ2 (θ2 fastest),
// each subsampled by 2^J. Multi-channel images are transformed channel by
// channel by the caller.
//
// # Conventions (kymatio's, kept exactly)
//
//   - Padding: each side is padded to (⌊(side + 2^J)/2^J⌋ + 1)·2^J
//     (compute_padding), ⌊(padded − side)/2⌋ before and the rest after, by
//     reflection without repeating the edge (numpy's "reflect"). 28 → 36,
//     32 → 40.
//   - Gabor filter on the padded M×N grid, x the row and y the column index:
//     g(u) = Σ_{ex,ey=−2..2} exp(−uᵀCu + iξ(u₁ cos θ + u₂ sin θ)) / (2·3.1415·σ²/slant)
//     at u = (x + ex·M, y + ey·N), with C = R diag(1, slant²) R⁻¹/(2σ²), R the
//     rotation by θ with its entries rounded to float32, and 3.1415 (not π)
//     in the normalisation, as in kymatio's gabor_2d.
//   - Morlet wavelet: ψ = g_ξ − K·g_0 with K = Σg_ξ/Σg_0 (zero mean), with
//     σ = 0.8·2^j, ξ = 3π/(4·2^j), θ = (⌊L − L/2 − 1⌋ − t)·π/L for
//     orientation index t (3π/8 … −π/2 for L = 8) and slant 4/L.
//   - Low-pass: the Gabor filter with σ = 0.8·2^(J−1), ξ = 0, slant 1.
//   - Filters are stored in the Fourier domain as the real part of their
//     unnormalised DFT, and at coarser resolutions 2^r (ψ for
//     r < min(j+1, max(J−1, 1)), φ for r < J) by kymatio's
//     periodize_filter_fft: the frequencies that would alias are zeroed and
//     the rest folded onto (M/2^r)×(N/2^r).
//   - Algorithm (scattering2d): the FFT of the padded image; for each
//     wavelet the product in the Fourier domain, subsampling by 2^j in the
//     Fourier domain (the mean of the 2^j×2^j aliases), inverse FFT,
//     modulus and FFT; φ applied at the resolution of the last wavelet
//     (2^j1 for S1, with the wavelets of the second order taken at level j1
//     and S2's φ at level j2) and subsampling to 2^J; the real part of the
//     inverse FFT; and one sample removed from each side (unpad).
//
// # How it is computed
//
// The filters and the low-pass matrices are built once, in float64, by
// New. Transform pads the image, takes its 2-D DFT with gonum's
// dsp/fourier (gonum v0.17.0; real FFTs of the rows, complex FFTs of the
// n/2+1 columns they give, the rest from the Hermitian symmetry) and S0
// from it in float64. The last step of every path — the product with φ,
// the subsampling to 2^J, the inverse DFT, the real part and the
// unpadding — is one linear map of the real |U|, and φ is an isotropic
// Gaussian whose Fourier transform is an outer product at every
// resolution, so New precomputes it as two small real matrices,
// S = G·|U|·Hᵀ (denseLowpass; equal to the Fourier-domain computation to
// rounding, TestDenseLowpass).
//
// For padded sides up to 128 the rest is the float32 stage
// (transform32), which works on the L wavelets of one scale at a time:
//
//   - each product of a spectrum with a wavelet is formed and periodised
//     (kymatio's subsample_fourier, the mean of the 2^j×2^j aliases, its
//     1/k² folded into the modulus' scale) as a sum of elementwise
//     products of contiguous blocks (fold32, block layout);
//   - the L inverse DFTs are dense real matrix products in float32
//     (internal/gemm), the L arrays side by side so that each product is
//     as wide as the batch, with whole-matrix transposes between the two
//     directions, each product reduced to about a quarter by the DFT
//     matrix's symmetries (symDFT), and the modulus taken in the last
//     combining step (idft32);
//   - the low-pass G·U·Hᵀ of the L moduli is two more products
//     (lowpass32);
//   - the L first-order moduli U1 that feed the second order are
//     transformed forward the same way (rdft32, their means taken out
//     first), and each gives its L·(J−1−j1) second-order paths the same
//     way again (secondOrder32).
//
// Float32 rounding costs each channel a few 1e-7 of relative error
// (TestFloat32Stage bounds it at 1e-6 against the float64 path), except
// where the second order would amplify U1's rounding: a path whose
// product carries little of U1's energy, R = ‖Û1‖·‖ψ̂‖/(√(m·n)·‖z‖) > 4,
// has its U1 computed again in float64 by FFT (0.6% of CIFAR-10's
// first-order paths, none of MNIST's). For one MNIST image this is about
// 0.2 ms on one core instead of 1.8 ms for the float64 FFT path;
// BenchmarkTransformMNISTFloat64 times the latter. Larger images take the
// float64 FFT path throughout, with the low-pass in the Fourier domain for
// padded sides over 128. The float64 path computes in float64 and rounds
// the output to float32 (kymatio computes in float32, so either agrees
// with it to about 1e-6 relative error per channel; see
// TestMatchesKymatio). Transform is safe for concurrent use and does not
// allocate once warm.
//
// Sizes: New accepts J in 1…MaxJ, L in 1…MaxL and sides of at least 2^J
// (kymatio's own condition), whose padded size has at most MaxPixels
// pixels and whose filter bank has at most MaxFilterValues values; for sides that are not multiples of 2^J the output size is
// ⌊side/2^J⌋, as in kymatio.
package scatter
