package sandbox

import (
	"slices"
	"strings"
	"testing"
)

// WithReadOnly grants the operator's skill directories inside ODEK_HOME,
// and refuses any directory that would open a denied path: one that holds
// a denied path, lies inside another one, or is ODEK_HOME itself.
func TestWithReadOnlyGrantsOnlySafeDirectories(t *testing.T) {
	const home, chats = "/srv/odek", "/srv/chats"
	base := NewTemplate(Settings{}, []string{home, chats}, failFS{})
	tpl, skipped := base.WithReadOnly([]string{
		home + "/skills",           // granted: inside ODEK_HOME only
		"/opt/team-skills",         // granted: outside every denied path
		home,                       // ODEK_HOME itself
		"/srv",                     // holds both denied paths
		chats + "/c1/skills",       // inside a chat's tree
		"relative/skills",          // not absolute
		home + "/skills/../skills", // the same as the first once cleaned
	}, home, failFS{})
	spec, err := tpl.For("/work/job", "/tmp/job")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{home + "/skills", "/opt/team-skills"} {
		if !slices.Contains(spec.ReadOnly, want) {
			t.Errorf("%s not granted: %v", want, spec.ReadOnly)
		}
	}
	for _, bad := range []string{home, "/srv", chats + "/c1/skills"} {
		if slices.Contains(spec.ReadOnly, bad) {
			t.Errorf("%s granted", bad)
		}
	}
	if len(skipped) != 4 || !strings.Contains(strings.Join(skipped, "\n"), "inside "+chats) {
		t.Errorf("skipped: %q", skipped)
	}
	if n := len(spec.ReadOnly); n != len(slices.Compact(slices.Sorted(slices.Values(spec.ReadOnly)))) {
		t.Errorf("a directory is granted twice: %v", spec.ReadOnly)
	}
	// The base template is unchanged.
	bs, _ := base.For("/work/job", "/tmp/job")
	if slices.Contains(bs.ReadOnly, home+"/skills") {
		t.Error("WithReadOnly changed the template it was called on")
	}
}
