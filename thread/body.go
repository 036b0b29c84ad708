package thread

import "github.com/uncaged/uwf/extract"

// outputBody returns the markdown body of a raw agent output: what follows
// its frontmatter block, or all of it if it has none.
func outputBody(raw string) string {
	_, body, err := extract.Split(raw)
	if err != nil {
		return raw
	}
	return body
}
