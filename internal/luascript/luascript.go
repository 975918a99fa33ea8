// Package luascript holds a Redis Lua script whose go-redis form — and so
// the script's SHA-1 — is made on first use instead of at package
// initialisation.
//
// A package-level `var s = redis.NewScript(src)` runs when the program
// starts, in every odek process, whether or not it ever talks to Redis:
// `odek run` links the queue and schedule packages (for other commands)
// and paid for their 22 scripts' hashing and for the start-up code each
// package's init touched. A package-level `var s = &luascript.Script{Src:
// src}` is laid out by the compiler as static data: nothing runs until
// the script is first called.
//
// Script has the methods of *redis.Script the odek packages call, with
// the same meaning.
package luascript

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Script is a Lua script made into a *redis.Script on first use. Set Src
// in a composite literal; a Script must not be copied after first use.
type Script struct {
	// Src is the script's Lua source.
	Src string

	once sync.Once
	s    *redis.Script
}

// Redis returns the script as go-redis's *redis.Script, making it (and
// its SHA-1) on the first call.
func (l *Script) Redis() *redis.Script {
	l.once.Do(func() { l.s = redis.NewScript(l.Src) })
	return l.s
}

// Hash is the script's SHA-1 in hex (*redis.Script.Hash).
func (l *Script) Hash() string { return l.Redis().Hash() }

// Load loads the script into Redis's script cache (*redis.Script.Load).
func (l *Script) Load(ctx context.Context, c redis.Scripter) *redis.StringCmd {
	return l.Redis().Load(ctx, c)
}

// EvalSha calls the script by its hash (*redis.Script.EvalSha).
func (l *Script) EvalSha(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	return l.Redis().EvalSha(ctx, c, keys, args...)
}

// Run calls the script by its hash and sends its source when Redis does
// not have it (*redis.Script.Run).
func (l *Script) Run(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	return l.Redis().Run(ctx, c, keys, args...)
}
