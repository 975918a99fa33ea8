//go:build !soak

package worker_test

const soak = false
