package disk

import (
	"errors"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/uncaged/uwf/internal/atomicfile"
)

// Where a batch makes its unnamed files.
//
// An unnamed file's inode is allocated in the block group of the folder it
// is made in, and on an ext4 without a journal (the benchmark VM's) every
// allocation first checks, one by one, each inode of that group freed in the
// last 60 to 360 seconds. Where other programs have just deleted many
// files, a creation costs up to 1 ms instead of 50 µs; next to the store,
// where the deleting happens (tests, earlier runs), that cost made most of
// a batch's time and swung with the neighbours' load (bench/README.md,
// section A). So a Store makes its unnamed files in folders of its own,
// tmp/new-<random>, made in tmp/ once tmp/ is marked as the top of a
// hierarchy (ext4's FS_TOPDIR_FL, chattr +T): ext4 then places each such
// folder, by a hash of its name, in a lightly used block group. It keeps
// two of them, times every creation, makes most files in the cheaper one,
// and now and then replaces the dearer one by a fresh folder (elsewhere on
// the disk) so that a group that turns busy is left. Nothing a reader sees
// differs: the files are linked into their shards as before, and the
// folders never hold a named file. A Store removes its folders when closed;
// Open and GC remove those left over an hour (a crashed writer's), and a
// writer whose folder was removed makes another.
const (
	newDirPrefix = "new-"
	// newDirsKept is how many folders a Store times against each other.
	newDirsKept = 2
	// newDirWarm is how many creations a folder gets before its cost is
	// compared.
	newDirWarm = 16
	// newDirExplore: every newDirExplore-th creation goes to the folder not
	// in favour, so that its cost stays known.
	newDirExplore = 16
	// newDirReview: every newDirReview creations, a folder that costs more
	// than newDirWorse times the other is replaced by a fresh one. A fresh
	// folder costs more for its first few dozen files (its group's bitmaps
	// are read, its first inode-table blocks set up), so the bar is high
	// and reviews rare: making one (ext4 looks over every group to place
	// it) and warming it up costs a few milliseconds.
	newDirReview = 1024
	newDirWorse  = 2.0
)

// newDir is one folder of unnamed files and what creating a file there
// has cost lately.
type newDir struct {
	path string
	cost float64 // moving average of a creation's time (ns), once n >= 1
	n    int     // creations timed here
	used int     // the chooser's count at its last use
}

// newDirs chooses the folder for each unnamed file (see above). It is safe
// for concurrent use.
type newDirs struct {
	mu    sync.Mutex
	dirs  []*newDir
	count int // creations chosen so far

	// make creates a fresh folder and returns its path; remove removes
	// one (errors ignored: a folder left over is removed as stale later).
	make   func() (string, error)
	remove func(path string)
	log    *slog.Logger
}

// pick returns the folder for the next unnamed file, making folders as
// needed. The caller reports how long the creation took with done, or
// that the folder has gone with gone.
func (c *newDirs) pick() (*newDir, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.count++
	if c.count%newDirReview == 0 {
		c.review()
	}
	for len(c.dirs) < newDirsKept {
		p, err := c.make()
		if err != nil {
			if len(c.dirs) > 0 {
				break // one folder will do
			}
			return nil, err
		}
		c.dirs = append(c.dirs, &newDir{path: p})
	}
	d := c.choose()
	d.used = c.count
	return d, nil
}

// choose returns the folder still warming up, else the least recently used
// every newDirExplore-th time, else the cheapest.
func (c *newDirs) choose() *newDir {
	for _, d := range c.dirs {
		if d.n < newDirWarm {
			return d
		}
	}
	best, stale := c.dirs[0], c.dirs[0]
	for _, d := range c.dirs[1:] {
		if d.cost < best.cost {
			best = d
		}
		if d.used < stale.used {
			stale = d
		}
	}
	if c.count%newDirExplore == 0 {
		return stale
	}
	return best
}

// review replaces the dearest folder by a fresh one if it costs over
// newDirWorse times the cheapest.
func (c *newDirs) review() {
	if len(c.dirs) < 2 {
		return
	}
	best, worst := 0, 0
	for i, d := range c.dirs {
		if d.n < newDirWarm {
			return
		}
		if d.cost < c.dirs[best].cost {
			best = i
		}
		if d.cost > c.dirs[worst].cost {
			worst = i
		}
	}
	if c.dirs[worst].cost <= newDirWorse*c.dirs[best].cost {
		return
	}
	c.log.Debug("replacing a folder of unnamed files", "path", c.dirs[worst].path,
		"cost", time.Duration(c.dirs[worst].cost), "other", time.Duration(c.dirs[best].cost), "files", c.dirs[worst].n)
	c.remove(c.dirs[worst].path)
	c.dirs = append(c.dirs[:worst], c.dirs[worst+1:]...)
}

// done records that a creation in d took took. One outlier (the thread
// descheduled on a busy machine) moves the average by at most 3/8 of it.
func (c *newDirs) done(d *newDir, took time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ns := float64(took)
	if d.n == 0 {
		d.cost = ns
	} else {
		d.cost += (min(ns, 4*d.cost) - d.cost) / 8
	}
	d.n++
}

// gone drops d, whose folder was removed (by another process's clean-up,
// or by hand): the next pick makes a fresh one.
func (c *newDirs) gone(d *newDir) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, e := range c.dirs {
		if e == d {
			c.dirs = append(c.dirs[:i], c.dirs[i+1:]...)
			return
		}
	}
}

// close removes the folders and forgets them.
func (c *newDirs) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range c.dirs {
		c.remove(d.path)
	}
	c.dirs = nil
}

// makeNewDir makes a fresh folder tmp/new-<random> for unnamed files,
// after marking tmp/ as the top of a hierarchy (see above); tmp/ is made
// again if it is missing. The flag is only a hint: where it cannot be set
// (another filesystem, another system) the folder is an ordinary one.
func (s *Store) makeNewDir() (string, error) {
	if err := atomicfile.MkdirAll(s.fs, s.tmpDir, false); err != nil {
		return "", err
	}
	if !s.spread.Load() {
		if err := atomicfile.SpreadSubdirs(s.tmpDir); err != nil && !errors.Is(err, errors.ErrUnsupported) {
			s.log.Debug("tmp/ not marked to spread its folders", "err", err)
		}
		s.spread.Store(true)
	}
	for {
		p := filepath.Join(s.tmpDir, newDirPrefix+strconv.FormatUint(rand.Uint64()>>16, 36))
		err := s.fs.Mkdir(p, 0o755)
		if !errors.Is(err, fs.ErrExist) {
			return p, err
		}
	}
}

// removeNewDir removes a folder of unnamed files (empty: they leave no
// entry), ignoring errors.
func (s *Store) removeNewDir(path string) {
	s.fs.Remove(path)
}

// isNewDir reports whether name, in tmp/, is a folder of unnamed files.
func isNewDir(name string) bool {
	return strings.HasPrefix(name, newDirPrefix)
}
