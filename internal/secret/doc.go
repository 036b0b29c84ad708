// Package secret keeps known secrets out of what uwf records and prints:
// a [Masker] replaces every known secret in text with [Mask], as CI
// systems mask their secrets in build logs, and [RedactURL] hides the
// password of a connection URL.
//
// # Vocabulary
//
// A known secret is a value uwf was told is secret: the store URL's
// password, the providers' API keys, .env and environment values whose
// variable name says it is secret, and the values config.yaml marks as
// secret. A value shorter than [MinLen] bytes is never masked: short
// values (a port, "true", a word) occur in ordinary text too often for
// masking them to help, and masking them would garble that text.
//
// # Caveats
//
// Masking is textual: a secret is found where it appears as written, in
// one of the escaped forms uwf's own output uses (JSON and Go string
// escapes, URL percent-encoding), or in text that shows it once its JSON
// or Go escapes are decoded (any character escaped, `\u0041`, `\/`,
// `\xHH`, up to three levels of escaping: see escape.go). A secret an
// agent transforms (base64, reversed, split across lines) is not found.
package secret
