package events_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/odekrun/odek/events"
)

// An Emitter stamps, redacts and numbers the events of one run and hands
// them to a sink from its own goroutine; Final writes the closing event
// and waits until the sink has it.
func ExampleEmitter() {
	clock := time.Date(2026, 8, 7, 12, 0, 0, 0, time.UTC)
	sink := events.SinkFunc(func(ev *events.Event) error {
		b, _ := json.Marshal(ev)
		fmt.Println(string(b))
		return nil
	})
	em := events.NewEmitter("0123456789abcdef0123456789abcdef", sink, events.Options{
		Clock: func() time.Time { return clock },
	})
	em.EmitPayload(0, "", events.RunStartedData{Model: "gpt-test", MaxIterations: 10})
	em.EmitPayload(1, "", events.SessionSavedData{MessageCount: 3})
	done := events.RunCompletedData{Duration: 1500 * time.Millisecond, InputTokens: 120, OutputTokens: 30}
	if err := em.Final(context.Background(), done.EventType(), done.Data()); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	// Output:
	// {"schema":"odek.event/v1","type":"run_started","seq":1,"run_id":"0123456789abcdef0123456789abcdef","timestamp":"2026-08-07T12:00:00Z","data":{"max_iterations":10,"model":"gpt-test","sandbox":false}}
	// {"schema":"odek.event/v1","type":"session_saved","seq":2,"run_id":"0123456789abcdef0123456789abcdef","iteration":1,"timestamp":"2026-08-07T12:00:00Z","data":{"message_count":3}}
	// {"schema":"odek.event/v1","type":"run_completed","seq":3,"run_id":"0123456789abcdef0123456789abcdef","timestamp":"2026-08-07T12:00:00Z","data":{"duration_ms":1500,"input_tokens":120,"output_tokens":30}}
}

// A consumer reads a payload by its type, from JSON a worker or a file
// sink wrote; fields it does not know are ignored.
func ExampleIterationCompletedData_Decode() {
	line := `{"schema":"odek.event/v1","type":"iteration_completed","seq":4,"run_id":"r","iteration":2,` +
		`"timestamp":"2026-08-07T12:00:00Z","data":{"input_tokens":900,"output_tokens":40,"tools_called":1,` +
		`"call_duration_ms":812.5,"call_output_tokens":40,"a_future_field":true}}`
	var ev events.Event
	if err := json.Unmarshal([]byte(line), &ev); err != nil {
		fmt.Println(err)
		return
	}
	var d events.IterationCompletedData
	d.Decode(ev.Data)
	fmt.Println(ev.Type, d.InputTokens, d.OutputTokens, d.CallDuration, d.TokensPerSecond())
	// Output:
	// iteration_completed 900 40 812.5ms 49.23
}
