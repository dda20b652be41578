package job

import (
	"encoding/json"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/dptune/dptune/data"
)

// dataCache keeps the datasets this process loaded most recently, so that
// a worker reads its data once, not once per job, and the curator's own
// process shares what it has loaded with its local jobs. It drops the
// least recently used entry while it holds more than dataCacheSize entries
// or more than dataCacheLimit() bytes, but never the newest: a tuning's
// split (and a doubling tuning's parts) stay until the next tuning's
// replace them, rather than every seed's piling up in a long comparison.
// An entry a job still reads stays in memory through that job; dropping
// it from the cache only means a later job loads it again.
var dataCache = struct {
	sync.Mutex
	keys []string // least recently used first
	m    map[string]loaded
}{m: map[string]loaded{}}

const (
	dataCacheSize = 6
	// dataCacheBytes bounds the cache's bytes, as does half the Go
	// runtime's soft memory limit (dataCacheLimit): room for a worker's
	// CIFAR-10 features and one split of them.
	dataCacheBytes = 8 << 30
)

// dataCacheLimit is the most bytes the cache keeps beyond its newest
// entry: dataCacheBytes, or half the soft memory limit if lower.
func dataCacheLimit() int64 {
	return min(dataCacheBytes, debug.SetMemoryLimit(-1)/2)
}

// loadedBytes is the memory l's distinct datasets hold.
func loadedBytes(l loaded) int64 {
	var n int64
	seen := map[*data.Dataset]bool{}
	for _, d := range append([]*data.Dataset{l.train, l.val}, l.parts...) {
		if d != nil && !seen[d] {
			seen[d] = true
			n += 4*int64(len(d.X)) + int64(len(d.Y))
		}
	}
	return n
}

func cacheKey(v any) string {
	b, _ := json.Marshal(v) // dataRef and rawRef always marshal
	return string(b)
}

// cachePut keeps l under key as the newest entry, dropping least recently
// used ones beyond the cache's bounds.
func cachePut(key string, l loaded) {
	c := &dataCache
	c.Lock()
	defer c.Unlock()
	c.keys = append(slices.DeleteFunc(c.keys, func(k string) bool { return k == key }), key)
	c.m[key] = l
	var bytes int64
	for _, k := range c.keys {
		bytes += loadedBytes(c.m[k])
	}
	for limit := dataCacheLimit(); len(c.keys) > 1 && (len(c.keys) > dataCacheSize || bytes > limit); c.keys = c.keys[1:] {
		bytes -= loadedBytes(c.m[c.keys[0]])
		delete(c.m, c.keys[0])
	}
}

// cacheGet returns the entry under key, now the most recently used.
func cacheGet(key string) (loaded, bool) {
	c := &dataCache
	c.Lock()
	defer c.Unlock()
	l, ok := c.m[key]
	if ok {
		i := slices.Index(c.keys, key)
		c.keys = append(slices.Delete(c.keys, i, i+1), key)
	}
	return l, ok
}
