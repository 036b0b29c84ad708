// Package archtest holds the tests that keep uwf's layering true: each
// package may import only what docs/ARCHITECTURE.md (and SPEC §1, second
// round) allow, and each package's tests only that plus the conformance
// suite, the store opener and the backends (the second table there), the
// disk and PostgreSQL backends' tests never importing each other.
package archtest
