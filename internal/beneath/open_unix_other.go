//go:build unix && !linux

package beneath

// openBeneath opens rel beneath dirfd one component at a time, each with
// O_NOFOLLOW.
func openBeneath(dirfd int, rel string, flags int) (int, error) {
	return openComponents(dirfd, rel, flags)
}
