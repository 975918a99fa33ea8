package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Args are validated arguments of one plan call.
type Args struct {
	Verb string
	// Steps is the new plan of a create.
	Steps []StepArg
	// Updates are the changes of an update, applied atomically.
	Updates []Update
	// StepID is the step a complete marks done.
	StepID string
}

// StepArg is one step of a create.
type StepArg struct {
	ID, Title string
}

// Update changes one step; a nil field is left as it is.
type Update struct {
	ID     string
	Status *Status
	Note   *string
}

// wireArgs is the JSON shape; unknown fields are ignored.
type wireArgs struct {
	Verb    *string           `json:"verb"`
	Steps   []json.RawMessage `json:"steps"`
	Updates []json.RawMessage `json:"updates"`
	StepID  *string           `json:"step_id"`
}

type wireStep struct {
	ID    *string `json:"id"`
	Title *string `json:"title"`
}

type wireUpdate struct {
	ID     *string `json:"id"`
	Status *string `json:"status"`
	Note   *string `json:"note"`
}

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgs}, a...)...)
}

// ParseArgs decodes and validates the arguments of one call. maxSteps
// bounds a create (0 ⇒ DefaultMaxSteps, capped at HardMaxSteps). Every
// error wraps ErrInvalidArgs and says what was expected. Unknown fields are
// ignored; fields that belong to another verb are ignored too.
func ParseArgs(raw []byte, maxSteps int) (Args, error) {
	if maxSteps <= 0 {
		maxSteps = DefaultMaxSteps
	}
	maxSteps = min(maxSteps, HardMaxSteps)
	if len(raw) > MaxArgsBytes {
		return Args{}, invalid("arguments are %d bytes, limit %d", len(raw), MaxArgsBytes)
	}
	var w wireArgs
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&w); err != nil {
		return Args{}, invalid("want a JSON object {\"verb\": \"create\"|\"update\"|\"complete\"|\"get\", ...}: %v", err)
	}
	if w.Verb == nil {
		return Args{}, invalid("missing \"verb\": want one of create, update, complete, get")
	}
	a := Args{Verb: *w.Verb}
	switch a.Verb {
	case VerbGet:
		return a, nil
	case VerbCreate:
		if len(w.Steps) == 0 || len(w.Steps) > maxSteps {
			return Args{}, invalid("create wants \"steps\": 1 to %d objects {\"id\", \"title\"}, got %d", maxSteps, len(w.Steps))
		}
		seen := make(map[string]bool, len(w.Steps))
		for i, rs := range w.Steps {
			var ws wireStep
			if err := json.Unmarshal(rs, &ws); err != nil {
				return Args{}, invalid("steps[%d]: want an object {\"id\": string, \"title\": string}: %v", i, err)
			}
			if ws.ID == nil || ws.Title == nil {
				return Args{}, invalid("steps[%d]: want both \"id\" and \"title\"", i)
			}
			if err := checkID(*ws.ID); err != nil {
				return Args{}, invalid("steps[%d].id: %v", i, err)
			}
			if seen[*ws.ID] {
				return Args{}, invalid("steps[%d].id %q is used twice; ids must be unique", i, *ws.ID)
			}
			seen[*ws.ID] = true
			if err := checkText(*ws.Title, MaxTitleChars, false); err != nil {
				return Args{}, invalid("steps[%d].title: %v", i, err)
			}
			a.Steps = append(a.Steps, StepArg{ID: *ws.ID, Title: *ws.Title})
		}
		return a, nil
	case VerbUpdate:
		if len(w.Updates) == 0 || len(w.Updates) > maxSteps {
			return Args{}, invalid("update wants \"updates\": 1 to %d objects {\"id\", \"status\"?, \"note\"?}, got %d", maxSteps, len(w.Updates))
		}
		seen := make(map[string]bool, len(w.Updates))
		for i, ru := range w.Updates {
			var wu wireUpdate
			if err := json.Unmarshal(ru, &wu); err != nil {
				return Args{}, invalid("updates[%d]: want an object {\"id\": string, \"status\"?: string, \"note\"?: string}: %v", i, err)
			}
			if wu.ID == nil {
				return Args{}, invalid("updates[%d]: missing \"id\"", i)
			}
			if seen[*wu.ID] {
				return Args{}, invalid("updates[%d].id %q appears twice in one update", i, *wu.ID)
			}
			seen[*wu.ID] = true
			if wu.Status == nil && wu.Note == nil {
				return Args{}, invalid("updates[%d]: want \"status\" and/or \"note\"", i)
			}
			u := Update{ID: *wu.ID, Note: wu.Note}
			if wu.Status != nil {
				st := Status(*wu.Status)
				if !st.valid() {
					return Args{}, invalid("updates[%d].status %q: want pending, in_progress, done or blocked", i, *wu.Status)
				}
				u.Status = &st
			}
			if wu.Note != nil {
				if err := checkText(*wu.Note, MaxNoteChars, true); err != nil {
					return Args{}, invalid("updates[%d].note: %v", i, err)
				}
			}
			a.Updates = append(a.Updates, u)
		}
		return a, nil
	case VerbComplete:
		if w.StepID == nil {
			return Args{}, invalid("complete wants \"step_id\": the id of the step that is done")
		}
		a.StepID = *w.StepID
		return a, nil
	}
	return Args{}, invalid("verb %q: want one of create, update, complete, get", a.Verb)
}

// checkID accepts 1–MaxIDBytes of ASCII letters, digits, '_', '-' or '.'.
func checkID(id string) error {
	if id == "" || len(id) > MaxIDBytes {
		return fmt.Errorf("want 1 to %d characters, got %d bytes", MaxIDBytes, len(id))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c == '_' || c == '-' || c == '.' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return fmt.Errorf("%q has byte %q at offset %d; want ASCII letters, digits, '_', '-' or '.'", id, c, i)
		}
	}
	return nil
}

// checkText accepts valid UTF-8 of at most maxChars characters without
// control characters (notes may be empty, titles not).
func checkText(s string, maxChars int, emptyOK bool) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("not valid UTF-8")
	}
	n := utf8.RuneCountInString(s)
	if n > maxChars {
		return fmt.Errorf("%d characters, limit %d", n, maxChars)
	}
	if !emptyOK && strings.TrimSpace(s) == "" {
		return fmt.Errorf("must not be empty")
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("contains control character %U; want a single line", r)
		}
	}
	return nil
}
