package config

import (
	"strconv"
	"strings"

	"github.com/uncaged/uwf/internal/yamldoc"
)

// parseDotEnv reads a .env file: one KEY=VALUE per line; blank lines and
// lines starting with # are skipped; "export " before the key is allowed;
// a value may be 'single-quoted' (taken literally), "double-quoted" (with
// the escapes \n \r \t \" \\ \$) or bare (trimmed, ending at a " #"
// comment). A later line wins over an earlier one. The error is a
// *ValidationError naming each bad line.
func parseDotEnv(file string, data []byte) (map[string]string, error) {
	ps := &yamldoc.Problems{File: file}
	env := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		at := yamldoc.Position{Line: i + 1}
		line = strings.TrimSuffix(line, "\r")
		if i == 0 {
			line = strings.TrimPrefix(line, "\uFEFF")
		}
		s := strings.TrimSpace(line)
		if s == "" || s[0] == '#' {
			continue
		}
		if rest, ok := strings.CutPrefix(s, "export"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			s = strings.TrimSpace(rest)
		}
		key, raw, ok := strings.Cut(s, "=")
		key = strings.TrimSpace(key)
		if !ok {
			ps.Add(at, "expected KEY=VALUE")
			continue
		}
		if !validEnvName(key) {
			ps.Add(at, "invalid variable name %s", strconv.Quote(key))
			continue
		}
		val, msg := dotEnvValue(strings.TrimSpace(raw))
		if msg != "" {
			ps.Add(at, "%s: %s", key, msg)
			continue
		}
		env[key] = val
	}
	if err := ps.Err(); err != nil {
		return nil, err
	}
	return env, nil
}

// dotEnvValue reads a trimmed value, or says what is wrong with it.
func dotEnvValue(s string) (string, string) {
	if s == "" {
		return "", ""
	}
	switch s[0] {
	case '\'':
		end := strings.IndexByte(s[1:], '\'')
		if end < 0 {
			return "", "unterminated single quote"
		}
		if msg := trailing(s[end+2:]); msg != "" {
			return "", msg
		}
		return s[1 : end+1], ""
	case '"':
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			c := s[i]
			switch {
			case c == '"':
				if msg := trailing(s[i+1:]); msg != "" {
					return "", msg
				}
				return b.String(), ""
			case c == '\\' && i+1 < len(s):
				i++
				switch s[i] {
				case 'n':
					b.WriteByte('\n')
				case 'r':
					b.WriteByte('\r')
				case 't':
					b.WriteByte('\t')
				case '"', '\\', '$':
					b.WriteByte(s[i])
				default:
					b.WriteByte('\\')
					b.WriteByte(s[i])
				}
			default:
				b.WriteByte(c)
			}
		}
		return "", "unterminated double quote"
	}
	if i := strings.Index(s, " #"); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, "\t#"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s), ""
}

// trailing checks what follows a closing quote: blanks, maybe a comment.
func trailing(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || s[0] == '#' {
		return ""
	}
	return "unexpected text after the closing quote"
}
