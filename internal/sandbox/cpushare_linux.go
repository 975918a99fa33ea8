//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"strings"
)

// A job's share of the CPU (issue 21).
//
// The kernel's scheduler shares the CPU between runnable threads, so a
// job that spins in 64 processes got 64 times the CPU of another chat's
// job with one, on the same worker. Group scheduling shares it between
// cgroups first: where this process can make cgroups in the cpu
// controller's hierarchy, every job gets one of its own — cgroup v1's cpu
// hierarchy beside the pids base (a cgroup of the same name, which the
// helper joins with the others), or cgroup v2's cpu controller enabled in
// the base's subtree_control — at the default weight (cpu.shares 1024,
// cpu.weight 100). Jobs then split the CPU evenly, whatever their thread
// count, and the worker's own threads compete with each job as one more.
// Where neither works, jobs share the CPU by thread, as before, and
// CgroupStatus says so. (Per-job nice would not help: nice weighs
// threads, not jobs.)

// cpuShareV1 is this process's cgroup in cgroup v1's cpu hierarchy when
// a job cgroup with cpu.shares can be made there and it is not one b
// already makes job cgroups in (cpu co-mounted with cpuacct), else "".
func cpuShareV1(mounts []mount, own map[string]string, b *cgroupBase) string {
	dir := v1Hierarchy(mounts, own, "cpu", "cpu.shares")
	if dir == "" || dir == b.dir || dir == b.memV1 || dir == b.cpuV1 {
		return ""
	}
	return dir
}

// enableCPUWeight enables cgroup v2's cpu controller for the job cgroups
// in dir when it is available (wanted, not required).
func enableCPUWeight(dir string, ctrls []byte, sub string) {
	cur, _ := os.ReadFile(sub)
	if hasWord(strings.Fields(string(ctrls)), "cpu") && !hasWord(strings.Fields(string(cur)), "cpu") {
		_ = os.WriteFile(sub, []byte("+cpu"), 0)
	}
}

// cpuShareStatus is CgroupStatus's word on the CPU share.
func cpuShareStatus(b *cgroupBase) string {
	switch {
	case b.shareV1 != "":
		return ", cpu share (v1) " + b.shareV1
	case !b.v2 && b.cpuV1 != "" && fileExists(filepath.Join(b.cpuV1, "cpu.shares")):
		return ", cpu share (v1, with cpuacct) " + b.cpuV1
	case b.v2 && fileExists(filepath.Join(b.dir, "cgroup.subtree_control")) && subtreeHas(b.dir, "cpu"):
		return ", cpu.weight"
	}
	return ", no CPU share (jobs share the CPU by thread)"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func subtreeHas(dir, ctrl string) bool {
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	return hasWord(strings.Fields(string(b)), ctrl)
}
