// Package store opens a uwf store by its URL: the one place that turns a
// store URL into a backend ([github.com/uncaged/uwf/cas/disk] or
// [github.com/uncaged/uwf/cas/postgres]) and the typed layer
// ([github.com/uncaged/uwf/cas.Repo]) over it. The uwf CLI opens every store through [Open], and
// so should any program embedding uwf, and any agent handed the store in
// UWF_STORE, so that all of them read a URL the same way.
//
// # Store URLs
//
//	/path/to/store, relative/path           the disk backend
//	file:///path, file://rel, file://localhost/path
//	                                        the disk backend (the path may be percent-encoded)
//	any of the above + ?durability=strict|none
//	                                        the disk backend with that durability
//	postgres://..., postgresql://...        the PostgreSQL backend (its URL is passed whole)
//
// A leading ~ or ~/ in a disk path is the user's home directory. A plain
// path that contains '?' is taken whole unless what follows is
// durability=...; any other scheme, an empty path, another query
// parameter on a disk URL, or durability on a PostgreSQL URL is an error
// ([URLError]).
//
// # Creation
//
// [Open] creates the store on first use: the disk store's folder (and its
// parent folders), or the PostgreSQL schema and tables, then the built-in
// schemas. This is safe when several processes start at once on the same
// URL: one creates the store and the others open it. With
// Options.NoCreate, Open creates and initialises nothing: it opens a store
// that is there, or fails (wrapping cas.ErrNotFound) where there is none.
//
// # Secrets
//
// A PostgreSQL URL may hold a password. Errors from this package name a
// URL with its password (and password= query parameters) shown as xxxxx.
package store
