package scatter

import (
	"math/rand/v2"
	"testing"
)

// benchmarkImages times the transform of c×h×w images (J = 2, L = 8, the
// built-in networks' settings) by TransformChannels and reports images/s:
// on one goroutine, or with parallel on GOMAXPROCS goroutines sharing one
// Scattering (the throughput of all of them together, as package features
// computes a dataset's features). With exact the float32 stage is
// turned off (the float64 FFT path throughout, for comparison).
func benchmarkImages(b *testing.B, c, h, w int, parallel, exact bool) {
	s, err := New(h, w, 2, 8)
	if err != nil {
		b.Fatal(err)
	}
	if exact {
		s.dft, s.lp32 = nil, nil
	}
	k, oh, ow := s.OutShape()
	rng := rand.New(rand.NewPCG(1, 2))
	img := make([]float32, c*h*w)
	for i := range img {
		img[i] = rng.Float32()
	}
	out := c * k * oh * ow
	b.ReportAllocs()
	b.ResetTimer()
	if parallel {
		b.RunParallel(func(pb *testing.PB) {
			dst := make([]float32, out)
			for pb.Next() {
				if err := s.TransformChannels(dst, img, c); err != nil {
					b.Error(err)
					return
				}
			}
		})
	} else {
		dst := make([]float32, out)
		for b.Loop() {
			if err := s.TransformChannels(dst, img, c); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "images/s")
}

// BenchmarkTransformMNIST times one 1×28×28 image on one goroutine.
func BenchmarkTransformMNIST(b *testing.B) { benchmarkImages(b, 1, 28, 28, false, false) }

// BenchmarkTransformCIFAR times one 32×32 channel on one goroutine; a
// CIFAR-10 image is three of them (BenchmarkTransformCIFARImage).
func BenchmarkTransformCIFAR(b *testing.B) { benchmarkImages(b, 1, 32, 32, false, false) }

// BenchmarkTransformCIFARImage times one 3×32×32 image on one goroutine.
func BenchmarkTransformCIFARImage(b *testing.B) { benchmarkImages(b, 3, 32, 32, false, false) }

// BenchmarkTransformMNISTParallel times 1×28×28 images on GOMAXPROCS
// goroutines.
func BenchmarkTransformMNISTParallel(b *testing.B) { benchmarkImages(b, 1, 28, 28, true, false) }

// BenchmarkTransformCIFARImageParallel times 3×32×32 images on GOMAXPROCS
// goroutines.
func BenchmarkTransformCIFARImageParallel(b *testing.B) { benchmarkImages(b, 3, 32, 32, true, false) }

// BenchmarkTransformMNISTFloat64 and BenchmarkTransformCIFARImageFloat64
// time the float64 FFT path (the float32 stage off) on one goroutine.
func BenchmarkTransformMNISTFloat64(b *testing.B) { benchmarkImages(b, 1, 28, 28, false, true) }

func BenchmarkTransformCIFARImageFloat64(b *testing.B) { benchmarkImages(b, 3, 32, 32, false, true) }
