// Command sandboxbench measures what the sandbox adds to one shell call,
// the way the shell tool starts it: `sh -c true` started by a sandbox.Jail
// (its own OS thread confined with the job's Landlock ruleset and seccomp
// filter, then fork and exec), and through the re-executed helper that a
// spec with resource limits needs (`odek __odek-sandbox-exec <spec> sh -c
// true`: the real odek binary's start-up, the limits, the ruleset, the
// filter, then exec), against a plain `sh -c true`; and, as this
// machine's baseline, the exec of an empty Go binary. All run
// interleaved, -n times each; it prints the median and the 90th
// percentile of each and the median added per call.
//
//	go run ./bench/sandboxbench -n 200
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/odekrun/odek/internal/sandbox"
)

func main() {
	n := flag.Int("n", 200, "calls of each kind")
	flag.Parse()
	if abi := sandbox.ABI(); abi < sandbox.RequiredABI {
		fmt.Fprintf(os.Stderr, "Landlock ABI %d < %d: nothing to measure\n", abi, sandbox.RequiredABI)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "sandboxbench-")
	check(err)
	defer os.RemoveAll(dir)
	odek := filepath.Join(dir, "odek")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", odek, "github.com/odekrun/odek/cmd/odek")
	build.Stderr = os.Stderr
	check(build.Run())
	empty := filepath.Join(dir, "empty")
	check(os.WriteFile(filepath.Join(dir, "empty.go"), []byte("package main\nfunc main() {}\n"), 0o600))
	eb := exec.Command("go", "build", "-o", empty, filepath.Join(dir, "empty.go"))
	eb.Stderr = os.Stderr
	check(eb.Run())

	root, tmp := filepath.Join(dir, "root"), filepath.Join(dir, "tmp")
	check(os.Mkdir(root, 0o700))
	check(os.Mkdir(tmp, 0o700))
	spec, err := sandbox.NewSpec(sandbox.Settings{}, sandbox.Paths{Root: root, TempDir: tmp}, sandbox.Host)
	check(err)
	specJSON := mustJSON(spec)
	env := sandbox.Env(spec, os.Environ())

	jail, err := sandbox.NewJail(spec)
	check(err)
	defer jail.Close()
	kinds := []struct {
		name string
		argv []string
		jail *sandbox.Jail
	}{
		{"sh -c true (unsandboxed)", []string{"sh", "-c", "true"}, nil},
		{"sh -c true in a Jail", []string{"sh", "-c", "true"}, jail},
		{"sh -c true via the helper", []string{odek, sandbox.HelperArg, specJSON, "sh", "-c", "true"}, nil},
		{"empty Go binary (baseline)", []string{empty}, nil},
	}
	times := make([][]time.Duration, len(kinds))
	for i := 0; i < *n+5; i++ {
		for k, kd := range kinds {
			cmd := exec.Command(kd.argv[0], kd.argv[1:]...)
			cmd.Dir, cmd.Env = root, env
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			start := time.Now()
			if kd.jail != nil {
				err = kd.jail.Start(cmd)
				if err == nil {
					err = cmd.Wait()
				}
			} else {
				err = cmd.Run()
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n%s", kd.name, err, out.String())
				os.Exit(1)
			}
			if i >= 5 { // warm-up
				times[k] = append(times[k], time.Since(start))
			}
		}
	}
	med := make([]time.Duration, len(kinds))
	for k, kd := range kinds {
		slices.Sort(times[k])
		med[k] = times[k][len(times[k])/2]
		fmt.Printf("%-28s median %7.3f ms  p90 %7.3f ms  (n=%d)\n", kd.name, ms(med[k]), ms(times[k][len(times[k])*9/10]), len(times[k]))
	}
	fmt.Printf("added by the sandbox: %.3f ms per call in a Jail, %.3f ms through the helper (medians); an empty Go binary's exec costs %.3f ms here\n",
		ms(med[1]-med[0]), ms(med[2]-med[0]), ms(med[3]))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func mustJSON(s sandbox.Spec) string {
	b, err := json.Marshal(s)
	check(err)
	return string(b)
}
