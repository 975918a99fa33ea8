package sandbox

import "fmt"

// Missing returns nil when a kernel with Landlock ABI abi can enforce the
// sandbox, and otherwise an error saying what is missing: the one text
// that the helper, Jail, Verify and a refusing worker all show.
func Missing(abi int) error {
	if abi >= RequiredABI {
		return nil
	}
	return fmt.Errorf("sandbox: Landlock ABI %d found, %d needed: %s", abi, RequiredABI, abiHint(abi))
}
