// Package serve is `uwf serve`: the HTTP API under /api/v1/ (the same JSON
// shapes as the CLI's --json), the live events stream (Server-Sent Events
// over the store's one watch API, [cas.Repo.Watch]), background steps, and
// who may do what (loopback Host checks, a bearer token for mutations, and
// for every route when bound beyond loopback). The viewer's pages are
// mounted from package serve/web. docs/HTTP.md documents every route.
package serve
