package redact

import "slices"

// valueSet finds registered values (needles) in text. It is immutable
// once built; Redactor swaps whole sets.
//
// The search is a fixed-stride variant of Wu–Manber: every needle is at
// least MinValueLen (8) bytes long, so any occurrence spans one of the
// positions from+7, from+14, …, and the two-byte block ending there is one
// of the seven blocks of that needle's first 8 bytes. The scan visits only
// those positions and looks up their block in a small table of blocks that
// occur in needle prefixes; only where it hits are the 7 possible starts
// compared, first by 8-byte prefix, then in full. The visited positions do
// not depend on the data, so the loads pipeline, and with a few dozen
// needles (each value brings its encodings) hits are rare on ordinary text.
type valueSet struct {
	needles []string // longest first
	maxLen  int
	// inPrefix marks the (hashed) blocks of needle prefixes; blockShift
	// turns a block's hash into an index.
	inPrefix   []bool
	blockShift uint
	// prefixBits is a one-hash Bloom filter of 8-byte needle prefixes,
	// checked before byPrefix.
	prefixBits [1 << 16 / 64]uint64
	byPrefix   map[uint64][]int32 // 8-byte prefix → needle indices, longest first
	first      byteClass          // first bytes of needles
}

func newValueSet(needles []string) *valueSet {
	const m = MinValueLen
	slices.SortFunc(needles, func(a, b string) int { return len(b) - len(a) })
	vs := &valueSet{needles: needles, byPrefix: make(map[uint64][]int32)}
	// About 1 slot in 16 marked keeps needless comparisons rare.
	bits := uint(12)
	for bits < 16 && 1<<bits < 16*(m-1)*len(needles) {
		bits++
	}
	vs.inPrefix = make([]bool, 1<<bits)
	vs.blockShift = 32 - bits
	for i, nd := range needles {
		vs.maxLen = max(vs.maxLen, len(nd))
		vs.first[nd[0]] = true
		for j := 1; j < m; j++ {
			vs.inPrefix[vs.block(nd[j-1], nd[j])] = true
		}
		k := load64(nd, 0)
		vs.byPrefix[k] = append(vs.byPrefix[k], int32(i))
		h := prefixHash(k)
		vs.prefixBits[h/64] |= 1 << (h % 64)
	}
	return vs
}

// block hashes the two-byte block a, b into an index of inPrefix. A
// collision only costs a needless comparison; the table has 4 to 64 Ki
// slots, sized to the number of needles, so that for the usual few dozen
// needles it stays in the L1 cache.
func (vs *valueSet) block(a, b byte) uint32 {
	return (uint32(a)<<8 | uint32(b)) * 0x9E3779B1 >> vs.blockShift
}

func prefixHash(k uint64) uint64 { return k * 0x9E3779B97F4A7C15 >> 48 }

// load64 reads 8 bytes of s at i as a little-endian integer.
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// scan reports every occurrence of a needle starting at or after sc.from,
// the longest needle where several start at the same byte. Occurrences may
// overlap.
func (vs *valueSet) scan(sc *scan) {
	const m = MinValueLen
	b := sc.b
	n := len(b)
	for pos := sc.from + m - 1; pos < n; pos += m - 1 {
		if !vs.inPrefix[vs.block(b[pos-1], b[pos])] {
			continue
		}
		for start := pos - (m - 1); start < pos && start+m <= n; start++ {
			k := load64(b, start)
			if h := prefixHash(k); vs.prefixBits[h/64]&(1<<(h%64)) == 0 {
				continue
			}
			for _, i := range vs.byPrefix[k] {
				nd := vs.needles[i]
				if start+len(nd) <= n && b[start:start+len(nd)] == nd {
					sc.add(start, start+len(nd))
					break
				}
			}
		}
	}
	if sc.atEOF {
		return
	}
	// A needle may begin in the last maxLen-1 bytes and end after them.
	for p := max(sc.from, n-vs.maxLen+1); p < n; p++ {
		if !vs.first[b[p]] {
			continue
		}
		tail := b[p:]
		for _, nd := range vs.needles {
			if len(nd) > len(tail) && nd[:len(tail)] == tail {
				sc.hold(p)
				return
			}
		}
	}
}
