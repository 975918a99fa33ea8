// Package telemetry is odek's OpenTelemetry tracing: setup from the
// standard OTEL_* variables, the span helpers the rest of odek calls, the
// GenAI semantic-convention attributes, the W3C trace-context carriers that
// take a trace across processes (inside a queue job, through a child's
// environment, in an MCP request's _meta and in HTTP headers), trace ids for
// logrus lines and for odek.event/v1 events, and an events.Sink that turns a
// run's existing events into model-call and tool-call spans.
//
// Off unless configured. Until Setup installs a provider with an exporter,
// every helper returns at once: Start gives back the caller's context and a
// shared no-op span without allocating (BenchmarkStartOff proves it), and
// the carriers still pass on a trace context the process was given, so a
// CI pipeline's trace survives an odek that does not export.
//
// When on, finished spans go to a bounded queue (Config.QueueSize) drained
// by one goroutine that exports batches with a timeout. Span.End never
// waits: a full queue drops the span and counts it (Stats.Dropped), so a
// slow or dead collector costs a job nothing but its spans.
//
// Content (prompts, completions, tool arguments and results) is left out
// unless Config.CaptureContent is set; captured text passes the Redactor
// given to Setup and is clipped to Config.MaxAttrBytes, like every string
// attribute.
//
// Concurrency and ownership: Setup and Shutdown are called once by a main;
// everything else is safe for concurrent use. The package holds the active
// provider in one atomic pointer; nothing here reads the environment
// itself (FromEnv takes a lookup function from the main).
package telemetry
