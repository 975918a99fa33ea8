package tools

import "sync"

// The shell classifier's tables (program sets, option specs, wrappers) are
// built on first use rather than at package initialisation: a
// package-level map or a call in a variable's initialiser is code that
// runs when any odek process starts — ~220 KB of maps and specs and
// ~3 ms at every start (GODEBUG=inittrace=1), most of it in processes
// that never classify a command (an `odek run` that only reads files, a
// worker, `odek version`). A pointer to a composite literal of these
// types is static data: nothing runs until the first lookup.
//
// Every lookup goes through a method that builds the table first, so a
// table cannot be read unbuilt (an unbuilt set reading as empty would
// class a blocked program as unknown).

// wordSet is a set of words given as one whitespace-separated string.
type wordSet struct {
	words string
	once  sync.Once
	m     map[string]bool
}

// has reports whether w is in the set.
func (s *wordSet) has(w string) bool {
	s.once.Do(func() { s.m = words2set(s.words) })
	return s.m[w]
}

// lazy is a value built by build on first use.
type lazy[T any] struct {
	build func() T
	once  sync.Once
	v     T
}

// get returns the value, building it on the first call.
func (l *lazy[T]) get() T {
	l.once.Do(func() { l.v = l.build() })
	return l.v
}

// lazySpec is an option table (newSpec's arguments) built on first use.
type lazySpec struct {
	short, long string
	flags       specFlags
	once        sync.Once
	s           *optSpec
}

// get returns the table, building it on the first call.
func (l *lazySpec) get() *optSpec {
	l.once.Do(func() { l.s = newSpec(l.short, l.long, l.flags) })
	return l.s
}
