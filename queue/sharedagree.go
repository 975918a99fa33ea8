package queue

import (
	"fmt"
	"strings"
)

// SharedExplicit says which shared settings a process was given
// explicitly (a flag or a variable): those must match the stored ones;
// the others adopt them.
type SharedExplicit struct {
	LeaseTTL, MaxAttempts bool
}

// SharedClash is a shared setting a process was given explicitly that
// disagrees with the one stored in the queue.
type SharedClash struct {
	// Setting is "lease" or "max-attempts" (the flags of `odek worker`
	// and `odek queue config`).
	Setting       string
	Given, Stored string
}

func (c SharedClash) String() string {
	return fmt.Sprintf("--%s %s (the queue's is %s)", c.Setting, c.Given, c.Stored)
}

// AgreeShared is what a worker that wants mine runs with when the queue
// stores stored: stored's settings, every worker the same. A setting given
// explicitly (explicit) that differs from the stored one is a clash, and
// the worker must not start. Pure.
func AgreeShared(stored, mine SharedConfig, explicit SharedExplicit) (SharedConfig, []SharedClash) {
	var clash []SharedClash
	if explicit.LeaseTTL && stored.LeaseTTL != mine.LeaseTTL {
		clash = append(clash, SharedClash{"lease", mine.LeaseTTL.String(), stored.LeaseTTL.String()})
	}
	if explicit.MaxAttempts && stored.MaxAttempts != mine.MaxAttempts {
		clash = append(clash, SharedClash{"max-attempts", fmt.Sprint(mine.MaxAttempts), fmt.Sprint(stored.MaxAttempts)})
	}
	return stored, clash
}

// SharedClashError is the error of a worker whose explicit shared
// settings disagree with the queue's, naming each and the way out.
func SharedClashError(prefix string, clash []SharedClash) error {
	parts := make([]string, len(clash))
	for i, c := range clash {
		parts[i] = c.String()
	}
	return fmt.Errorf("odek worker: %s disagrees with the shared config in %sconfig; every worker must use the same. Drop the flag to adopt the queue's, or change it for all with `odek queue config --lease D --max-attempts N` and restart the workers",
		strings.Join(parts, " and "), KeyPrefix(prefix))
}
