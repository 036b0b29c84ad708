package cas

// SetMemHash replaces the address function of s, so tests can force hash
// collisions. Call it before s is used.
func SetMemHash(s *MemStore, sum func([]byte) Hash) { s.sum = sum }

// DropMemRef removes ref name from r without logging it, as a ref file
// deleted behind the disk store's back would be: its log then says it
// exists while it does not.
func DropMemRef(r *MemRefs, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removeLocked(name)
}
