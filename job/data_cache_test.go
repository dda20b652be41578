package job

import (
	"fmt"
	"runtime/debug"
	"slices"
	"testing"

	"github.com/dptune/dptune/data"
)

// withEmptyDataCache runs f on an empty data cache under a soft memory
// limit of limit bytes, then puts back the cache and limit it found.
func withEmptyDataCache(t *testing.T, limit int64, f func()) {
	t.Helper()
	dataCache.Lock()
	keys, m := dataCache.keys, dataCache.m
	dataCache.keys, dataCache.m = nil, map[string]loaded{}
	dataCache.Unlock()
	old := debug.SetMemoryLimit(limit)
	defer func() {
		debug.SetMemoryLimit(old)
		dataCache.Lock()
		dataCache.keys, dataCache.m = keys, m
		dataCache.Unlock()
	}()
	f()
}

// floats is a dataset of n float32s and one label: 4n+1 bytes.
func floats(n int) *data.Dataset {
	return &data.Dataset{X: make([]float32, n), Y: make([]uint8, 1), N: 1, C: 1, H: 1, W: n}
}

func cachedKeys() []string {
	dataCache.Lock()
	defer dataCache.Unlock()
	return slices.Clone(dataCache.keys)
}

// A long comparison puts one split (and one doubling tuning's parts) per
// seed; the cache keeps them only within half the soft memory limit,
// dropping the least recently used first and never the newest, and
// counts a dataset shared between an entry's sets once.
func TestDataCacheKeepsWithinHalfTheMemoryLimit(t *testing.T) {
	const mb = 1 << 20
	withEmptyDataCache(t, 40*mb, func() { // limit 20 MiB
		shared := floats(2 * mb) // 8 MiB + 1 byte
		cachePut("a", loaded{train: shared, val: shared})
		cachePut("b", loaded{train: floats(2 * mb)})
		if got := loadedBytes(dataCache.m["a"]); got != 8*mb+1 {
			t.Fatalf("a dataset shared by train and val counted as %d bytes, want %d", got, 8*mb+1)
		}
		if _, ok := cacheGet("a"); !ok { // a is now more recent than b
			t.Fatal("a dropped at 16 MiB of a 20 MiB limit")
		}
		cachePut("c", loaded{train: floats(2 * mb)})
		if got, want := cachedKeys(), []string{"a", "c"}; !slices.Equal(got, want) {
			t.Fatalf("after a third 8 MiB entry the cache holds %v, want %v (b least recently used)", got, want)
		}
		cachePut("huge", loaded{train: floats(8 * mb), parts: []*data.Dataset{floats(mb)}})
		if got, want := cachedKeys(), []string{"huge"}; !slices.Equal(got, want) {
			t.Fatalf("an entry above the limit: cache holds %v, want only the newest %v", got, want)
		}
		cachePut("huge", loaded{train: floats(mb)}) // replaced: one key
		if got, want := cachedKeys(), []string{"huge"}; !slices.Equal(got, want) {
			t.Fatalf("after replacing its only entry the cache holds %v, want %v", got, want)
		}
	})
}

// Small entries are bounded by count, as before any byte bound.
func TestDataCacheKeepsAtMostSixEntries(t *testing.T) {
	withEmptyDataCache(t, 1<<40, func() {
		for i := range 9 {
			cachePut(fmt.Sprint(i), loaded{train: floats(1)})
		}
		if got, want := cachedKeys(), []string{"3", "4", "5", "6", "7", "8"}; !slices.Equal(got, want) {
			t.Fatalf("cache holds %v, want %v", got, want)
		}
	})
}
