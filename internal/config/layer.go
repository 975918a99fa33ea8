package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"strings"

	"github.com/ilyakaznacheev/cleanenv"
)

// Layers are the two configuration files as Load read them.
type Layers struct {
	// Operator is $ODEK_HOME/config.json: trusted.
	Operator Layer
	// Project is ./odek.json: untrusted; a package reading a section from
	// it must decide what a project may set (typically: only tighten).
	Project Layer
}

// Layer is one configuration file. The zero Layer is a missing file.
type Layer struct {
	// Path is the absolute file path, whether or not the file exists.
	Path string
	// Raw is the file content (a JSON object, UTF-8 byte order mark
	// removed); nil when the file does not exist. Treat it as read-only and
	// never log it: the operator file may contain the API key.
	Raw json.RawMessage
}

// Exists reports whether the file was present.
func (l Layer) Exists() bool { return l.Raw != nil }

// String names the file without its content, so printing a Layer never
// leaks a key.
func (l Layer) String() string {
	if !l.Exists() {
		return l.Path + " (absent)"
	}
	return fmt.Sprintf("%s (%d bytes)", l.Path, len(l.Raw))
}

// GoString is String.
func (l Layer) GoString() string { return l.String() }

// Section decodes the top-level key of the file into dst, which must be a
// non-nil pointer, and reports whether the key was present and not null.
// Keys match as in the rest of the file (encoding/json rules: exact match
// preferred, else case-insensitive; the last match wins), and unknown fields
// inside the section are ignored. dst is left untouched when the key is
// absent; fields missing from the section keep their values in dst, so dst
// may be pre-filled with defaults.
//
// Type errors are *Error naming l.Path, the dotted field and the line. key
// must consist of ASCII letters, digits, '_' and '-'; otherwise Section
// returns an ErrInvalid error.
func (l Layer) Section(key string, dst any) (bool, error) {
	if !validSectionKey(key) {
		return false, fmt.Errorf("%w: section key %q: want ASCII letters, digits, '_' or '-'", ErrInvalid, key)
	}
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return false, fmt.Errorf("%w: section %q: destination must be a non-nil pointer, got %T", ErrInvalid, key, dst)
	}
	if !l.Exists() {
		return false, nil
	}
	tag := reflect.StructTag(`json:"` + key + `"`)
	// Presence first: a RawMessage field sees the value exactly as the
	// typed decode will.
	probeT := reflect.StructOf([]reflect.StructField{{Name: "V", Type: reflect.TypeFor[json.RawMessage](), Tag: tag}})
	probe := reflect.New(probeT)
	if err := json.Unmarshal(l.Raw, probe.Interface()); err != nil {
		return false, decodeError(l.Path, l.Raw, err)
	}
	raw := probe.Elem().Field(0).Bytes()
	if raw == nil || string(raw) == "null" {
		return false, nil
	}
	// Decode the whole file through a one-field struct so that type errors
	// carry the full dotted path and an offset into the file.
	boxT := reflect.StructOf([]reflect.StructField{{Name: "V", Type: rv.Type(), Tag: tag}})
	box := reflect.New(boxT)
	box.Elem().Field(0).Set(rv)
	if err := json.Unmarshal(l.Raw, box.Interface()); err != nil {
		return true, decodeError(l.Path, l.Raw, err)
	}
	return true, nil
}

func validSectionKey(k string) bool {
	if k == "" || len(k) > 128 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// fileInput is one configuration file as read from disk.
type fileInput struct {
	path string
	data []byte      // nil: file absent
	mode fs.FileMode // permission bits; meaningful only when data != nil
}

// readFile reads a configuration file, refusing anything that is not a
// regular file or is larger than MaxFileBytes. A missing file is not an
// error.
func readFile(path string) (fileInput, error) {
	in := fileInput{path: path}
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return in, nil
	}
	if err != nil {
		return in, invalidf(path, "", "cannot open: %v", unwrapPath(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return in, invalidf(path, "", "cannot stat: %v", unwrapPath(err))
	}
	if !st.Mode().IsRegular() {
		return in, invalidf(path, "", "not a regular file (mode %v)", st.Mode())
	}
	if st.Size() > MaxFileBytes {
		return in, invalidf(path, "", "file is %d bytes, exceeding the limit MaxFileBytes=%d", st.Size(), MaxFileBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return in, invalidf(path, "", "cannot read: %v", unwrapPath(err))
	}
	if len(data) > MaxFileBytes {
		return in, invalidf(path, "", "file grew past the limit MaxFileBytes=%d while reading", MaxFileBytes)
	}
	if data == nil {
		data = []byte{}
	}
	in.data, in.mode = data, st.Mode().Perm()
	return in, nil
}

// unwrapPath drops the *fs.PathError wrapper, whose text repeats the path
// the *Error already names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

var utf8BOM = []byte("\xef\xbb\xbf")

// parseObject checks that data is exactly one JSON object and decodes it
// into each of dsts with cleanenv. It returns data without a byte order
// mark.
func parseObject(path string, data []byte, dsts ...any) ([]byte, error) {
	data = bytes.TrimPrefix(data, utf8BOM)
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, &Error{Source: path, Reason: "file is empty; want a JSON object such as {}", Err: ErrSyntax}
	}
	// Unmarshal validates the whole input (trailing data included) before
	// decoding, so syntax errors come with an offset.
	var probe json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, decodeError(path, data, err)
	}
	if trimmed[0] != '{' {
		line, col := position(data, int64(len(data)-len(bytes.TrimLeft(data, " \t\r\n"))+1))
		return nil, &Error{Source: path, Line: line, Column: col, Reason: "top level must be a JSON object", Err: ErrSyntax}
	}
	for _, dst := range dsts {
		if err := cleanenv.ParseJSON(bytes.NewReader(data), dst); err != nil {
			return nil, decodeError(path, data, err)
		}
	}
	return data, nil
}

// decodeError turns an encoding/json error into an *Error with a position.
// It never includes the offending value: it may be a secret.
func decodeError(path string, data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := position(data, se.Offset)
		return &Error{Source: path, Line: line, Column: col, Reason: se.Error(), Err: ErrSyntax}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		line, col := position(data, te.Offset)
		got, _, _ := strings.Cut(te.Value, " ") // "number 12" → "number": drop the value
		return &Error{Source: path, Field: te.Field, Line: line, Column: col,
			Reason: fmt.Sprintf("wrong type: got a JSON %s, want %s", got, JSONKind(te.Type)), Err: ErrInvalid}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		line, col := position(data, int64(len(data)))
		return &Error{Source: path, Line: line, Column: col, Reason: "unexpected end of JSON input", Err: ErrSyntax}
	}
	return &Error{Source: path, Reason: err.Error(), Err: ErrSyntax}
}

// JSONKind names what a Go type accepts in JSON terms ("a string", "an
// integer", "an object", …), for type-mismatch messages of any package
// that decodes configuration sections. A nil type is "another type".
func JSONKind(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}

// position converts encoding/json's offset ("error after reading offset
// bytes") into a 1-based line and column of the byte at offset-1.
func position(data []byte, offset int64) (line, col int) {
	if offset < 1 {
		offset = 1
	}
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	before := data[:max(offset-1, 0)]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = len(before) - bytes.LastIndexByte(before, '\n')
	return line, col
}
