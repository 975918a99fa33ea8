package main

import (
	"context"

	"github.com/odekrun/odek/internal/host"
	"github.com/odekrun/odek/internal/outschema"
)

// exitOutputInvalid: the answer stayed invalid against --output-schema.
const exitOutputInvalid = outschema.ExitOutputInvalid

// statusOutputInvalid is the --json status of such a run.
const statusOutputInvalid = "output_invalid"

// runWithSchema runs spec; with a schema (odek run --output-schema) the
// goal carries the schema, every final answer is checked inside the run
// (outschema.Checker as agent.Config.CheckAnswer: an invalid answer gets
// up to repairs corrective turns and an output_invalid event each), and a
// run whose last answer is still invalid ends with exit code 5 and status
// output_invalid. value is the parsed answer; the Outcome's answer is the
// JSON text (without a code fence).
func runWithSchema(ctx context.Context, h *host.Host, spec host.RunSpec, schema *outschema.Schema, repairs int) (host.Outcome, any, error) {
	if schema == nil {
		oc, err := h.Run(ctx, spec)
		return oc, nil, err
	}
	checker := outschema.NewChecker(schema, repairs)
	spec.Goal += schema.Instructions()
	spec.CheckAnswer = checker.Check
	oc, err := h.Run(ctx, spec)
	if err != nil {
		return oc, nil, err
	}
	value, err := checker.Result()
	if err != nil {
		oc.Status, oc.ExitCode, oc.Error = statusOutputInvalid, exitOutputInvalid, err.Error()
		return oc, nil, err
	}
	oc.Answer = outschema.Extract(oc.Answer)
	return oc, value, nil
}
