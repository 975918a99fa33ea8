//go:build !unix

package main

import "os"

// peakRSSMiB is unknown (-1) where the process state carries no rusage.
func peakRSSMiB(*os.ProcessState) float64 { return -1 }
