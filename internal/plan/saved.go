package plan

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ErrSaved is wrapped by Restore for a saved plan that does not hold.
var ErrSaved = errors.New("plan: invalid saved plan")

// Saved is a plan as it is stored with a session between runs.
type Saved struct {
	Version int    `json:"version"`
	Steps   []Step `json:"steps"`
}

// Save returns s in its stored form; nil for the zero State (no plan).
func (s State) Save() json.RawMessage {
	if s.Version == 0 && len(s.Steps) == 0 {
		return nil
	}
	b, err := json.Marshal(Saved{Version: s.Version, Steps: s.Steps})
	if err != nil {
		return nil // cannot happen: strings and ints only
	}
	return b
}

// Restore parses a stored plan and checks it as strictly as the tool
// checks the model's arguments: at most HardMaxSteps steps with valid,
// unique ids, non-empty titles and notes within their limits, known
// statuses, and a positive version. nil or empty input is the zero State.
// Pure.
func Restore(raw json.RawMessage) (State, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return State{}, nil
	}
	if len(raw) > MaxArgsBytes*4 {
		return State{}, fmt.Errorf("%w: %d bytes, limit %d", ErrSaved, len(raw), MaxArgsBytes*4)
	}
	var sv Saved
	if err := json.Unmarshal(raw, &sv); err != nil {
		return State{}, fmt.Errorf("%w: %v", ErrSaved, err)
	}
	if len(sv.Steps) == 0 || len(sv.Steps) > HardMaxSteps {
		return State{}, fmt.Errorf("%w: want 1 to %d steps, got %d", ErrSaved, HardMaxSteps, len(sv.Steps))
	}
	if sv.Version < 1 {
		return State{}, fmt.Errorf("%w: version %d, want ≥ 1", ErrSaved, sv.Version)
	}
	seen := make(map[string]bool, len(sv.Steps))
	for i, st := range sv.Steps {
		if err := checkID(st.ID); err != nil {
			return State{}, fmt.Errorf("%w: steps[%d].id: %v", ErrSaved, i, err)
		}
		if seen[st.ID] {
			return State{}, fmt.Errorf("%w: steps[%d].id %q is used twice", ErrSaved, i, st.ID)
		}
		seen[st.ID] = true
		if err := checkText(st.Title, MaxTitleChars, false); err != nil {
			return State{}, fmt.Errorf("%w: steps[%d].title: %v", ErrSaved, i, err)
		}
		if err := checkText(st.Note, MaxNoteChars, true); err != nil {
			return State{}, fmt.Errorf("%w: steps[%d].note: %v", ErrSaved, i, err)
		}
		if !st.Status.valid() {
			return State{}, fmt.Errorf("%w: steps[%d].status %q", ErrSaved, i, st.Status)
		}
	}
	return State{Version: sv.Version, Steps: sv.Steps}, nil
}
