package bot

import "sync"

// serializer runs functions one at a time per key (a chat id), in the
// order they were handed over, with different keys in parallel. A key's
// goroutine exists only while it has work. Safe for concurrent use.
type serializer struct {
	mu     sync.Mutex
	queues map[int64][]func()
	wg     sync.WaitGroup
}

func newSerializer() *serializer { return &serializer{queues: map[int64][]func(){}} }

// Do queues fn behind the earlier functions of key.
func (s *serializer) Do(key int64, fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, running := s.queues[key]
	s.queues[key] = append(q, fn)
	if running {
		return
	}
	s.wg.Add(1)
	go s.drain(key)
}

func (s *serializer) drain(key int64) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		q := s.queues[key]
		if len(q) == 0 {
			delete(s.queues, key)
			s.mu.Unlock()
			return
		}
		fn := q[0]
		q[0] = nil
		s.queues[key] = q[1:]
		s.mu.Unlock()
		fn()
	}
}

// Wait blocks until every queued function has run.
func (s *serializer) Wait() { s.wg.Wait() }
