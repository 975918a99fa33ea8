package bot

import "sync"

// serializer owns the chat actors. Each chat's state (a *chat) is touched
// only by the functions handed to Do for that chat, which run one at a time
// in the order they were handed over, on a goroutine that exists only while
// the chat has work; different chats run in parallel. Ownership passes from
// one function to the next through the serializer's mutex, so a chat needs
// no lock of its own and no other goroutine reads it.
//
// What the router needs to know about a chat without asking it (is a job
// running, is a progress tick queued, its state snapshot) is published by
// the actor after each function into its entry, under the serializer's
// mutex. Safe for concurrent use.
type serializer struct {
	mu     sync.Mutex
	actors map[actorKey]*actor
	wg     sync.WaitGroup
	// newChat makes a chat's state the first time work arrives for it.
	newChat func(k actorKey) *chat
	// publish, when set, is called in the actor's goroutine after each
	// function, to record what the router may read (see actor.pub).
	publish func(c *chat) published
}

// actor is one chat's entry: its state, its queued work and what it
// published.
type actor struct {
	c       *chat
	queue   []work
	running bool
	pub     published
	// tickQueued: a progress tick is queued and not yet run, so the
	// progress loop does not queue another behind a busy chat.
	tickQueued bool
}

// work is one queued function; done, when set, is called after the
// function ran and the actor published.
type work struct {
	fn   func(*chat)
	done func()
}

// published is what a chat actor shows the router after each function.
type published struct {
	busy bool      // it has unfinished jobs (progress ticks are due)
	snap *chatSnap // its state for the state file (nil when not kept)
	jobs map[string]jobSnap
	drop bool // it holds nothing worth keeping: forget it once idle
}

func newSerializer(newChat func(actorKey) *chat) *serializer {
	return &serializer{actors: map[actorKey]*actor{}, newChat: newChat}
}

// entry returns the actor of key, creating it. s.mu must be held.
func (s *serializer) entry(key actorKey) *actor {
	a := s.actors[key]
	if a == nil {
		a = &actor{c: s.newChat(key)}
		s.actors[key] = a
	}
	return a
}

// Do queues fn behind the earlier functions of key.
func (s *serializer) Do(key actorKey, fn func(*chat)) { s.do(key, work{fn: fn}) }

func (s *serializer) do(key actorKey, w work) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.entry(key)
	a.queue = append(a.queue, w)
	if a.running {
		return
	}
	a.running = true
	s.wg.Add(1)
	go s.drain(key, a)
}

// tick queues fn for key unless a tick queued earlier has not run yet. It
// reports whether fn was queued.
func (s *serializer) tick(key actorKey, fn func(*chat)) bool {
	s.mu.Lock()
	a := s.actors[key]
	if a == nil || a.tickQueued {
		s.mu.Unlock()
		return false
	}
	a.tickQueued = true
	s.mu.Unlock()
	s.Do(key, func(c *chat) {
		s.mu.Lock()
		a.tickQueued = false
		s.mu.Unlock()
		fn(c)
	})
	return true
}

func (s *serializer) drain(key actorKey, a *actor) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		if len(a.queue) == 0 {
			a.running = false
			if a.pub.drop && s.actors[key] == a {
				delete(s.actors, key)
			}
			s.mu.Unlock()
			return
		}
		w := a.queue[0]
		a.queue[0] = work{}
		a.queue = a.queue[1:]
		s.mu.Unlock()
		w.fn(a.c)
		if s.publish != nil {
			p := s.publish(a.c)
			s.mu.Lock()
			a.pub = p
			s.mu.Unlock()
		}
		if w.done != nil {
			w.done()
		}
	}
}

// keys returns the chats that have an actor; busyOnly keeps those with
// unfinished jobs.
func (s *serializer) keys(busyOnly bool) []actorKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]actorKey, 0, len(s.actors))
	for k, a := range s.actors {
		if !busyOnly || a.pub.busy {
			out = append(out, k)
		}
	}
	return out
}

// all runs fn on every chat (each in its own actor) and waits until they
// ran and published.
func (s *serializer) all(fn func(*chat)) {
	var wg sync.WaitGroup
	for _, k := range s.keys(false) {
		wg.Add(1)
		s.do(k, work{fn: fn, done: wg.Done})
	}
	wg.Wait()
}

// kept reports whether key has an actor that did not ask to be dropped
// (tests).
func (s *serializer) kept(key actorKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.actors[key]
	return a != nil && !a.pub.drop
}

// snapshots returns what the actors last published for the state file.
func (s *serializer) snapshots() (map[actorKey]chatSnap, map[string]jobSnap) {
	s.mu.Lock()
	defer s.mu.Unlock()
	chats, jobs := map[actorKey]chatSnap{}, map[string]jobSnap{}
	for k, a := range s.actors {
		if a.pub.snap != nil {
			chats[k] = *a.pub.snap
		}
		for id, j := range a.pub.jobs {
			jobs[id] = j
		}
	}
	return chats, jobs
}

// put installs a chat's state before any work runs (state restore).
func (s *serializer) put(c *chat, p published) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.actors[c.key()] = &actor{c: c, pub: p}
}

// pending is how many functions wait in key's queue (tests).
func (s *serializer) pending(key actorKey) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.actors[key]; a != nil {
		return len(a.queue)
	}
	return 0
}

// Wait blocks until every queued function has run.
func (s *serializer) Wait() { s.wg.Wait() }
