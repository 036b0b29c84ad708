package dirnotify

import (
	"errors"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// Start calls wake at every change inotify(7) reports in the folder
// dir/name (a file written, created, renamed in or removed), and, until
// that folder exists, at every creation in dir, until stop is called. The
// inotify descriptor is non-blocking and read through Go's poller, so
// stop ends the reading goroutine at once.
func Start(dir, name string, wake func()) (stop func(), err error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "inotify")
	journal := filepath.Join(dir, name)
	var mu sync.Mutex
	watching := false
	watchJournal := func() {
		mu.Lock()
		defer mu.Unlock()
		if watching {
			return
		}
		if _, err := unix.InotifyAddWatch(fd, journal, unix.IN_MODIFY|unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_DELETE); err == nil {
			watching = true
		}
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_ONLYDIR); err != nil {
		f.Close()
		return nil, err
	}
	watchJournal()
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64*1024)
		for {
			n, err := f.Read(buf)
			if n > 0 {
				watchJournal()
				wake()
			}
			if err != nil && !errors.Is(err, unix.EINTR) {
				return // closed
			}
		}
	}()
	return func() {
		f.Close()
		<-done
	}, nil
}
