// Package bot is odek's Telegram front end: it turns chat messages into
// queue jobs and job results, progress and approval questions back into
// chat messages.
//
// # What it does
//
// Bot.Run long-polls the Bot API (or serves a webhook), authorizes every
// update against the allowlists before anything else, answers the commands
// (/start, /help, /new, /stop, /status, /usage, /artifact <id>, /retry,
// /model, /compact), enqueues a
// job per message (idempotency key = the update id, so a redelivered update
// never runs twice), keeps one status message per running job edited from
// its progress stream, shows tool approvals as inline keyboards, and
// delivers each result once: the notice, the answer as Telegram HTML in
// chunks of at most 4096 characters, one line per artifact and a footer with
// tokens, cost and duration in one message, then the first artifacts as
// files. Documents and photos users send are saved in the chat's directory
// (after the sender's rate and the chat's budget are checked, within the
// chat's storage quota: quota.go) and named in the goal; each job carries
// what is left of its chat's daily token budget as its cap, reserved while
// it is unfinished, and a message that finds the rest of the day reserved
// waits in the chat until its jobs end; voice and audio messages are transcribed
// (Transcriber) and shown back first; the answer streams while it is
// written (sendMessageDraft or status edits, stream.go); a status ledger
// (StatusLedger, kept by queue) lets the next start clean status messages a crash left;
// in groups it answers only when addressed.
//
// The bot is the shell around a Telegram-free core, bot/chatcore, which
// decides: how a message is routed (chatcore.RouteOf), what the chat's
// daily budget says about a request (chatcore.Admit: a cap, a hold, a
// refusal), what progress shows (chatcore.Status) and what a result's
// reply and books are (chatcore.PlanResult). The shell parses updates into
// the core's terms, keeps the chat's state and turns decisions into Bot
// API calls. It reaches a model endpoint only through Config.Transcriber
// and Config.Compactor (/compact), both optional.
//
// Formatting lives in bot/tgformat (goldmark's Markdown AST rendered to
// Telegram HTML, with a plain-text twin of every chunk sent when Telegram
// still rejects the entities) and the Bot API client (rate limit, retries,
// error classification, raw calls, file downloads) in bot/tgclient. Decisions (authorization, rate limits, daily budgets, retry
// backoff, Telegram error classification, status text) are pure functions
// with table tests; the I/O code calls them.
//
// # Concurrency and ownership
//
// A Bot is created by New and run once by Run, which returns when its
// context ends; all its goroutines have stopped by then. The Bot is a
// router: each chat is an actor (chat) whose state — sessions, usage,
// artifact ids, unfinished jobs, approval prompts, waiting batches — is
// owned by the chat's serializer goroutine and touched by nothing else, so
// chats run in parallel and one chat's work runs in order. The loops
// (updates, results, progress ticks, approvals) only route to the actors;
// what is not one chat's (the per-user job rate, refusals, languages,
// health, results in flight) sits in small tables with a lock each. Actors
// publish their snapshot after each step for Config.State. The Bot owns
// the HTTP client it creates; the queue is the caller's and is not closed.
// Pure functions are safe for concurrent use.
package bot
