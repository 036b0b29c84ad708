// Package web is uwf's viewer: the pages `uwf serve` shows at its root,
// built from files embedded in the binary (no Node toolchain, no CDN, no
// external request).
//
// Pages are rendered on the server with [html/template]: the thread list,
// a thread's timeline, its forks and a diff against its origin, a
// workflow's routing graph (laid out by [LayoutGraph] and drawn as SVG) and
// any node as JSON with its edges as links. A little plain JavaScript keeps
// them live (an EventSource on /api/v1/events fetches the changed part
// again) and calls the JSON API's mutations with the Bearer token the page
// took from its URL fragment.
//
// # Untrusted content
//
// Everything read from the store is untrusted: agents hold UWF_STORE and
// can write any node. Markdown is rendered by goldmark with raw HTML off
// and the result sanitised by an allowlist of the elements and attributes
// goldmark writes, anything else escaped as text ([RenderMarkdown]); everything
// else goes through html/template's contextual escaping; SVG labels are
// escaped; the script never builds HTML from strings (it sets textContent,
// or inserts a fragment this package rendered); and every response carries
// a Content-Security-Policy that allows no inline script, no eval and no
// other origin.
//
// # Concurrency
//
// A [Handler] is safe for concurrent use.
package web
