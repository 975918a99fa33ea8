package ext

import (
	"path/filepath"
	"strings"
)

// jobArtifactRoots narrows the artifact roots of a server started in a
// job's jail to that job (issue 21, the adversarial pass): the client
// that validates and reads a ref runs unconfined, in the worker, so a
// root spanning every chat's directory (the natural setting for a
// job-scoped server, whose job root changes per job) would let a confined
// server in one chat name another chat's file and have the worker read it
// for it. Each configured root that holds jobRoot becomes jobRoot; one
// inside jobRoot stays; any other is dropped. Pure.
func jobArtifactRoots(roots []string, jobRoot string) []string {
	jr := filepath.Clean(jobRoot)
	var out []string
	add := func(p string) {
		for _, o := range out {
			if o == p {
				return
			}
		}
		out = append(out, p)
	}
	for _, r := range roots {
		r = filepath.Clean(r)
		switch {
		case pathWithin(r, jr):
			add(jr)
		case pathWithin(jr, r):
			add(r)
		}
	}
	return out
}

// pathWithin reports whether p is dir or below it (both clean, absolute).
func pathWithin(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}
