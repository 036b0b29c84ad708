// Package gfm is goldmark's Table, Strikethrough and TaskList extensions
// (GitHub Flavored Markdown), copied from github.com/yuin/goldmark v1.8.7's
// package extension (MIT License, in LICENSE) for the viewer's markdown
// (serve/web): linking goldmark's extension package runs its init on every
// start of uwf, about 0.6 ms spent compiling linkify's regexps, which the
// viewer never uses. See README.md for what changed.
package gfm
