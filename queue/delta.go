package queue

// DeltaSchema is the schema field of an AnswerDelta progress entry, the
// third kind beside odek.event/v1 lines and ProgressSummary.
const DeltaSchema = "odek.delta/v1"

// AnswerDelta is a piece of the answer a running job's model is writing,
// which a worker appends to the job's progress stream (coalesced, a few a
// second) so a front end can show the answer as it is generated. Call
// numbers the model calls (attempts) of the run from 1: a higher Call
// starts a new text. Offset is how many bytes of this call's text came
// before Text, so a reader that missed an entry sees the gap.
type AnswerDelta struct {
	Schema string `json:"schema"` // DeltaSchema
	JobID  string `json:"job_id"`
	Call   int    `json:"call"`
	Offset int    `json:"offset"`
	Text   string `json:"text"`
}
