// Package events defines the odek.event/v1 structured event stream: the
// event envelope and its types, a non-blocking Emitter and the JSONL
// FileSink. Other sinks plug in through the one-method Sink interface (the
// worker's Redis progress sink lives in queue); Multi fans out to several.
//
// # Emitter
//
// One Emitter serves one run. Emit never blocks the agent loop: it stamps
// the event (run id, session id, Seq, UTC timestamp, schema), applies the
// caller's redaction to every string in it, and queues it on a buffered
// channel drained by one goroutine that calls the sink. When the buffer is
// full the event is dropped and counted; Seq numbers are assigned in emit
// order whether or not the event is dropped, so a gap in the written
// stream shows where events were lost. A sink that returns errors or
// panics is reported to Options.OnError and counted, never crashes the
// process, and keeps receiving later events.
//
// Final emits the terminal event (run_completed or run_failed), which is
// never dropped, and returns once the sink has written it and everything
// queued before it. Close drains without a terminal event. A nil *Emitter
// is valid and does nothing, so code that may run without events needs no
// checks.
//
// # Payloads
//
// Every event type's data has a Go type (RunStartedData,
// IterationCompletedData, ToolCallStartedData, …) implementing Payload:
// Data renders it as the map an Event carries — the contract's field
// names, units and presence rules are written once, there — and
// EmitPayload emits it. Consumers read an event's data back with the
// type's Decode, which accepts the Go numbers of an in-process event and
// the float64 or json.Number of a decoded one, ignores unknown fields and
// leaves missing ones zero. Float and Int read a single numeric field the
// same way.
//
// # FileSink
//
// OpenFile enforces the contract's rules for --events-jsonl: parent
// directory must exist, no symbolic link (checked and O_NOFOLLOW), regular
// file only, mode 0600. Each event is one write(2) of one line followed by
// fdatasync, so it is on stable storage before Write returns. A line over
// FileOptions.MaxLineBytes is written with its large data fields dropped
// and listed in data.truncated_fields, plus data.line_bytes: the event keeps
// its Seq and type, so the stream stays gapless and paired.
//
// # Ownership and concurrency
//
// Emitter and FileSink methods are safe for concurrent use. Emit copies
// the data map; the caller keeps it. A Sink receives events one at a time
// from the drain goroutine and must not retain or modify them. Whoever
// opens a FileSink closes it, after the Emitter writing to it is closed.
//
// This package imports only the standard library; redaction comes in as a
// function (internal/redact's Redactor.String fits).
package events
