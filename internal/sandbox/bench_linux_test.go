//go:build linux

package sandbox

import (
	"os/exec"
	"testing"
)

// BenchmarkJobSandbox is what confining one job costs a worker: the
// job's Spec from the process's Template and its Jail, whose thread is
// confined (ruleset built) at the job's first command (here /bin/true,
// exec and limits included), and the Jail's Close, which ends the job's
// processes.
func BenchmarkJobSandbox(b *testing.B) {
	if ABI() < RequiredABI {
		b.Skip("no Landlock")
	}
	root, tmp := b.TempDir(), b.TempDir()
	tpl := NewTemplate(Settings{}, nil, Host)
	b.ReportAllocs()
	for b.Loop() {
		spec, err := tpl.For(root, tmp)
		if err != nil {
			b.Fatal(err)
		}
		j, err := NewJail(spec)
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command("/bin/true")
		if err := j.Start(cmd); err != nil {
			b.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
		j.Close()
	}
}
