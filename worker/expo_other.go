//go:build !unix

package worker

// processCPU is not measured here.
func processCPU() (float64, bool) { return 0, false }
