package runenv

// SetShmDir points the fast place for run directories elsewhere (a small
// tmpfs a test mounted) and returns the function that restores it.
func SetShmDir(dir string) (restore func()) {
	old := shmDir
	shmDir = dir
	return func() { shmDir = old }
}
