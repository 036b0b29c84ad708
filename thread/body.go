package thread

import "strings"

// outputBody returns the markdown body of a raw agent output: what follows
// its frontmatter block, or all of it if it has none.
func outputBody(raw string) string {
	s := strings.TrimPrefix(raw, "\ufeff")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	t := strings.TrimLeft(s, " \t\n")
	if !strings.HasPrefix(t, "---\n") {
		return raw
	}
	rest := t[4:]
	if strings.HasPrefix(rest, "---\n") || rest == "---" {
		return strings.TrimPrefix(rest, "---")
	}
	if i := strings.Index(rest, "\n---\n"); i >= 0 {
		return rest[i+5:]
	}
	if strings.HasSuffix(rest, "\n---") {
		return ""
	}
	return raw
}
