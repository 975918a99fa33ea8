package ext

import (
	"slices"
	"testing"
)

// A job-scoped server's artifact roots never reach past its job's root:
// a root holding every chat's directory narrows to this job's, a root
// inside the job stays, and a root elsewhere (another chat's directory,
// a sibling) is dropped.
func TestJobArtifactRoots(t *testing.T) {
	const job = "/data/chats/aaaa"
	for _, c := range []struct {
		roots []string
		want  []string
	}{
		{[]string{"/data/chats"}, []string{job}},
		{[]string{"/data"}, []string{job}},
		{[]string{"/"}, []string{job}},
		{[]string{job + "/out"}, []string{job + "/out"}},
		{[]string{job}, []string{job}},
		{[]string{"/data/chats/bbbb"}, nil},
		{[]string{"/data/chats/aaaa-x"}, nil},
		{[]string{"/data/chats", "/data", job + "/out/"}, []string{job, job + "/out"}},
		{nil, nil},
	} {
		if got := jobArtifactRoots(c.roots, job+"/"); !slices.Equal(got, c.want) {
			t.Errorf("jobArtifactRoots(%q) = %q, want %q", c.roots, got, c.want)
		}
	}
}
