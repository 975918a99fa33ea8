package queue

// WaitingScripts is the number of script calls queued for the next shared
// round trip (tests only).
func (r *Redis) WaitingScripts() int {
	r.co.mu.Lock()
	defer r.co.mu.Unlock()
	return len(r.co.pending)
}
