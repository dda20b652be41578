package scatter

import (
	"math/rand/v2"
	"testing"
)

func benchmarkTransform(b *testing.B, h, w int) {
	s, err := New(h, w, 2, 8)
	if err != nil {
		b.Fatal(err)
	}
	k, oh, ow := s.OutShape()
	rng := rand.New(rand.NewPCG(1, 2))
	img := make([]float32, h*w)
	for i := range img {
		img[i] = rng.Float32()
	}
	dst := make([]float32, k*oh*ow)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := s.Transform(dst, img); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "images/s")
}

// BenchmarkTransformMNIST times one 28×28 image (J = 2, L = 8) on one
// goroutine.
func BenchmarkTransformMNIST(b *testing.B) { benchmarkTransform(b, 28, 28) }

// BenchmarkTransformCIFAR times one 32×32 channel (J = 2, L = 8) on one
// goroutine; a CIFAR-10 image is three of them.
func BenchmarkTransformCIFAR(b *testing.B) { benchmarkTransform(b, 32, 32) }

// BenchmarkTransformMNISTParallel times 28×28 images transformed by
// GOMAXPROCS goroutines sharing one Scattering; images/s is the throughput
// of all of them together.
func BenchmarkTransformMNISTParallel(b *testing.B) {
	s, err := New(28, 28, 2, 8)
	if err != nil {
		b.Fatal(err)
	}
	k, oh, ow := s.OutShape()
	img := testImage(28, 28, 4, 24, 3)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		dst := make([]float32, k*oh*ow)
		for pb.Next() {
			if err := s.Transform(dst, img); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "images/s")
}
