package main

import (
	"reflect"
	"testing"
)

// --approve and --retry-max reach the schedule; approving the schedule
// tool ahead is refused by the schedule package when it is created.
func TestScheduleAddApproveAndRetryFlags(t *testing.T) {
	a := scheduleArgs{chat: 7, every: "1h", approve: " shell, http_fetch ,", retryMax: 2, session: "isolated", missed: "skip"}
	s, err := a.schedule([]string{"check", "the", "build"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Approve, []string{"shell", "http_fetch"}) || s.RetryMax != 2 || s.Text != "check the build" {
		t.Fatalf("%+v", s)
	}
}
