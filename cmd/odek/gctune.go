package main

import "runtime/debug"

// runGCPercent is the GC target of the commands that run one agent loop
// (see tuneGC).
const runGCPercent = 50

// tuneGC lowers the GC target of `odek run`, `continue` and `subagent` to
// runGCPercent unless the GOGC variable is set. Such a process keeps a
// small live heap (2–3 MiB: the compiled JSON Schema drafts, the tool
// tables, one conversation) and allocates a few MiB over its life, so with
// the default GOGC=100 the first collection waits for a 4 MiB heap and the
// heap's pages are most of what the process touches beyond its binary.
// Measured with bench/loopbench interleaved against the untuned build
// (docs/BENCHMARKS.md): ~0.7 MiB less peak RSS for a 50-iteration run, CPU
// per model call unchanged within the noise. Workers keep the default.
//
// It then returns the heap that package initialisation left behind to the
// operating system (debug.FreeOSMemory: one forced collection and a
// scavenge, well under a millisecond). Initialisation allocates ~2.3 MB
// that is garbage by the time main runs — 1.7 MB of it the JSON Schema
// library compiling five drafts' meta-schemas — and, left alone, those
// pages stay resident for the whole run beside the ones the loop uses.
func tuneGC(args []string, userSet bool) {
	if userSet || len(args) == 0 {
		return
	}
	switch args[0] {
	case "run", "continue", "subagent":
		debug.SetGCPercent(runGCPercent)
		debug.FreeOSMemory()
	}
}
