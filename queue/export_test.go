package queue

import "context"

// WaitingScripts is the number of script calls queued for the next shared
// round trip (tests only).
func (r *Redis) WaitingScripts() int {
	n := 0
	for _, co := range []*coalescer{r.co, r.cw} {
		co.mu.Lock()
		n += len(co.pending)
		co.mu.Unlock()
		if r.cw == r.co {
			break
		}
	}
	return n
}

// StartWith runs the start script once for the (entry, job id) pairs with
// token, as Claim does after reading them (tests: the same call resent).
func (r *Redis) StartWith(ctx context.Context, consumer, token string, pairs ...string) ([]Lease, error) {
	args := append(r.base(), token)
	for _, p := range pairs {
		args = append(args, p)
	}
	v, err := asSlice(startScript.Run(ctx, r.c, r.ks, args...).Result())
	if err != nil {
		return nil, err
	}
	return parseLeases(consumer, v)
}
