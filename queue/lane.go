package queue

import (
	"fmt"
	"strconv"
)

// Lanes (issue 26, forum topics). Jobs of one chat run one at a time, in
// order, so that a conversation never has two runs at once. A chat can
// hold several conversations that are independent of each other — the
// topics of a Telegram forum — and their jobs should run in parallel like
// different chats' jobs. Job.Lane names the conversation within the chat:
// jobs of the same chat and lane run one at a time in order; jobs of
// different lanes run side by side. "" is the chat's main lane, the only
// one before lanes existed, so unfinished jobs of an older version keep
// their place.

// MaxLaneLen is the longest Job.Lane accepted.
const MaxLaneLen = 64

// LaneKey is the key a job's lane is serialized under: the chat id, then
// "/" and the lane when it has one. Pure.
func LaneKey(chatID int64, lane string) string {
	if lane == "" {
		return strconv.FormatInt(chatID, 10)
	}
	return strconv.FormatInt(chatID, 10) + "/" + lane
}

// checkLane validates Job.Lane: at most MaxLaneLen bytes of
// [A-Za-z0-9_.:-] ("" = the main lane). Pure.
func checkLane(lane string) error {
	if lane == "" {
		return nil
	}
	if len(lane) > MaxLaneLen || !validID(lane) {
		return fmt.Errorf("%w: lane %q must be 1..%d bytes of [A-Za-z0-9_.:-]", ErrInvalidJob, clip(lane, 40), MaxLaneLen)
	}
	return nil
}
