// Package archtest holds the test that keeps uwf's layering true: each
// package may import only what docs/ARCHITECTURE.md (and SPEC §1) allow.
package archtest
