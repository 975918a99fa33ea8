// Package stackstart grows the stack of the goroutine that runs package
// initialisation and main — once, while that stack is shallow — so that it
// does not grow later, deep inside a call.
//
// Why: every time the runtime grows (copies) a goroutine's stack it walks
// each frame on it and reads that function's tables in the binary's
// pclntab. Left alone, odek's main goroutine grows from 8 to 16 KiB inside
// the JSON Schema library's init (30 frames deep) and to 32 KiB inside
// encoding/json during the first model request (34 frames deep); each
// walk faults in 64 KiB windows of pclntab that nothing else in the
// process reads. Grown here, at the second package initialised (this
// package imports nothing, so it runs before any package that does), the
// copy walks four frames. Measured with bench/loopbench (docs/BENCHMARKS.md,
// "odek run's peak memory, round 4"): a 50-iteration `odek run` peaks
// ~0.7 MiB lower. The stack is an ordinary goroutine stack: the garbage
// collector shrinks it again when little of it is used (a worker's main
// goroutine, which mostly waits), so long-lived processes keep nothing.
//
// cmd/odek imports it for its side effect only; it must stay free of
// imports, or it would be initialised after them.
package stackstart

// Frame is the size of grow's frame. The runtime doubles a stack until the
// frame fits above what is in use, so the main goroutine's stack becomes
// 64 KiB: more than a run needs at its deepest, so it does not grow again.
const Frame = 32 << 10

// index is a variable, so that the compiler keeps grow's array and its
// stores (a constant index would let it fold them away).
var index = 1

func init() { Grow() }

// Grow needs a Frame-byte stack frame; calling it grows the calling
// goroutine's stack to fit one. Exported for the test.
//
//go:noinline
func Grow() byte {
	var frame [Frame]byte
	frame[index] = 1
	return frame[2*index]
}
