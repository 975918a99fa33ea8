package events

import "errors"

// SinkFunc adapts a function to the Sink interface.
type SinkFunc func(ev *Event) error

// Write calls f(ev).
func (f SinkFunc) Write(ev *Event) error { return f(ev) }

// Multi returns a Sink that writes each event to every non-nil sink in
// order. A sink that fails or panics does not keep the event from the
// others; Write returns the failures joined (a panic as an error wrapping
// ErrSinkPanic). The sinks see the same *Event and must not modify it.
func Multi(sinks ...Sink) Sink {
	var ms multiSink
	for _, s := range sinks {
		if s != nil {
			ms = append(ms, s)
		}
	}
	return ms
}

type multiSink []Sink

func (ms multiSink) Write(ev *Event) error {
	var errs []error
	for _, s := range ms {
		if err := writeRecovered(s, ev); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func writeRecovered(s Sink, ev *Event) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicError(v)
		}
	}()
	return s.Write(ev)
}
