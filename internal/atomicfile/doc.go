// Package atomicfile writes files so that a crash leaves either the old state
// or the new one, never a torn file under its final name.
//
// A write goes: create a temporary file, write, sync it, close it, then give
// it its final name and sync the folder that holds the name. [Replace] names
// it with rename(2), replacing whatever was there (refs, logs, metadata).
// [Publish] never overwrites: it uses renameat2(2) with RENAME_NOREPLACE
// where the kernel and filesystem support it, else link(2) followed by
// removing the temporary name; if the name is taken the error wraps
// [fs.ErrExist] (content-addressed objects, whose existing bytes the caller
// must verify before deciding what to do).
//
// The pieces ([WriteTempFile], [WriteTemp], [PublishTemp], [ReplaceTemp],
// [MkdirAll]) are exported so that a caller can batch them: write many
// temporary files, make them durable together, publish them in order, then
// sync each folder once.
//
// Every filesystem operation goes through the small [FS] interface. [OS] is
// the real filesystem; tests substitute a recording FS
// (package atomicfiletest) to check the order of writes, syncs and renames,
// which a SIGKILL cannot reveal.
//
// # Concurrency
//
// The helpers keep no state and are safe for concurrent use; names of
// temporary files are unique per process (process id and a counter) and
// created with O_EXCL.
package atomicfile
