// Package dirnotify wakes a caller when files in a folder change: inotify(7)
// on Linux, nothing elsewhere (callers poll). The disk store's watchers
// use it to learn of journal records written by other processes.
package dirnotify
