package redisstore

// genMap is a map bounded by bytes in two generations: the current
// generation becomes the old one when it is full (max/2 bytes) and the old
// one is dropped; a hit in the old one moves to the current one, so what
// is used stays. It holds at most max bytes (or one entry larger than its
// generation). The caller locks.
type genMap[K comparable, V any] struct {
	limit    int64            // the bytes of the current generation
	size     func(K, V) int64 // an entry's approximate memory
	cur, old map[K]V
	// bytes and oldBytes are the sizes of cur and old.
	bytes, oldBytes int64
}

func newGenMap[K comparable, V any](max int64, size func(K, V) int64) genMap[K, V] {
	return genMap[K, V]{limit: max / 2, size: size, cur: map[K]V{}}
}

// get finds k in either generation, moving a hit in the old one to the
// current one.
func (g *genMap[K, V]) get(k K) (V, bool) {
	if v, ok := g.cur[k]; ok {
		return v, true
	}
	v, ok := g.old[k]
	if ok {
		g.put(k, v)
	}
	return v, ok
}

// put sets k's entry in the current generation, turning it first when the
// entry would take it past its limit.
func (g *genMap[K, V]) put(k K, v V) {
	if prev, ok := g.cur[k]; ok {
		g.bytes -= g.size(k, prev)
		delete(g.cur, k)
	}
	n := g.size(k, v)
	if g.bytes+n > g.limit {
		g.old, g.oldBytes = g.cur, g.bytes
		g.cur, g.bytes = map[K]V{}, 0
	}
	g.cur[k] = v
	g.bytes += n
}
