package artifacts_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/odekrun/odek/artifacts"
)

// A tool's text is an envelope: a summary for the model plus refs to files
// it wrote. The refs are validated against the operator's roots before the
// model hears of them, and only their metadata is shown.
func Example() {
	root, _ := os.MkdirTemp("", "artifacts-example")
	defer os.RemoveAll(root)
	report := filepath.Join(root, "report.txt")
	os.WriteFile(report, []byte("all 42 tests passed\n"), 0o600)

	text := `{"schema":"odek.tool-result/v1","text":"CI finished: green.","artifacts":[` +
		`{"schema":"odek.artifact-ref/v1","id":"report-1","uri":"file://` + report + `",` +
		`"media_type":"text/plain","size_bytes":20,"summary":"test report"}]}`
	env, err := artifacts.ParseEnvelope(text)
	if err != nil {
		fmt.Println("malformed:", err)
		return
	}
	v := artifacts.Validator{Roots: []string{root}}
	refs, err := v.Validate(env.Artifacts)
	if err != nil {
		fmt.Println("rejected:", err)
		return
	}
	fmt.Println(env.Text)
	for _, line := range artifacts.MetadataLines(refs) {
		fmt.Println(line)
	}
	// Output:
	// CI finished: green.
	// [odek artifact] id="report-1" media_type="text/plain" size_bytes=20 summary="test report"
}

// A ref outside every root is refused with a reason the model may see;
// the path never appears in it.
func ExampleValidator_Validate() {
	root, _ := os.MkdirTemp("", "artifacts-example")
	defer os.RemoveAll(root)
	size := int64(5)
	_, err := (&artifacts.Validator{Roots: []string{root}}).Validate([]artifacts.RefSpec{{
		Schema: "odek.artifact-ref/v1", ID: "secrets", URI: "file:///etc/passwd", MediaType: "text/plain", SizeBytes: &size,
	}})
	fmt.Println(err)
	// Output:
	// artifacts: artifact ref #0 "secrets": path is outside every artifact root
}
