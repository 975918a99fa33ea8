package main

import (
	"os"
	"strconv"
	"sync/atomic"

	"github.com/odekrun/odek/bot"
)

// crashAfterSentEnv names the crash tests' hook: when it is a number n ≥
// 1, the process kills itself (SIGKILL on Unix) right after the n-th step
// of a result's delivery this process delivered was accepted by Telegram
// and its "sent" record written: the point a real crash would leave a
// partly delivered answer (store_sent_e2e_test.go). Not documented in
// --help: it is for tests, and harmless otherwise (the operator who sets
// it only stops their own bot).
const crashAfterSentEnv = "ODEK_TEST_KILL_AFTER_SENT"

// crashHook sets cfg.AfterSent from crashAfterSentEnv.
func crashHook(cfg *bot.Config) {
	n, err := strconv.Atoi(os.Getenv(crashAfterSentEnv))
	if err != nil || n < 1 {
		return
	}
	var seen atomic.Int64
	cfg.AfterSent = func(string, int) {
		if seen.Add(1) >= int64(n) {
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				_ = p.Kill()
			}
			select {} // the kill is on its way
		}
	}
}
