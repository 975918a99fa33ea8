// Command odek-sandbox is the sandbox helper alone: what `odek
// __odek-sandbox-exec <spec> <argv…>` does, in a binary that links only
// internal/sandbox. odek and odek-bot re-execute it, when it sits beside
// them, for every confined command instead of themselves: the whole odek
// binary runs ~220 package initialisers before main (a JSON Schema
// compiler among them, ~3 ms), which every shell call paid
// (docs/BENCHMARKS.md). Installed next to odek; without it, odek
// re-executes itself as before.
package main

import (
	"fmt"
	"os"

	"github.com/odekrun/odek/internal/sandbox"
)

func main() {
	sandbox.Main() // the helper: applies the spec, execs the command, never returns
	fmt.Fprintf(os.Stderr, "usage: %s %s <spec JSON> <command> [args…]\n(the sandbox helper of odek; not run by hand)\n", os.Args[0], sandbox.HelperArg)
	os.Exit(sandbox.ExitUsage)
}
