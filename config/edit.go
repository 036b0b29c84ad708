package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/uncaged/uwf/cas"
	"github.com/uncaged/uwf/internal/atomicfile"
	"github.com/uncaged/uwf/internal/yamldoc"
)

// Edit is one change of config.yaml that [Update] makes: the value at a
// dot path, or its removal.
type Edit struct {
	// Path is a dot path, as [Set] takes it ("providers.openai.baseURL").
	Path string
	// Value is read as YAML, as [Set] reads it.
	Value string
	// IfUnset leaves a value already at Path alone: the edit only fills
	// in what is missing.
	IfUnset bool
	// Comment, if not empty, is written above the key when the edit
	// creates it ("# Claude Code, headless: ..."); an existing key keeps
	// its comments.
	Comment string
	// Delete removes the key at Path, with its value and the comment on
	// its line, instead of setting it (Value, IfUnset and Comment are
	// ignored). A comment on the lines above the key is kept: it moves to
	// the next key, or stays at the end of the mapping. A path that is
	// not there changes nothing.
	Delete bool
}

// Update makes the edits to <home>/config.yaml in order, as one change:
// like [Set], it creates the file (mode 0600), the home directory and
// intermediate mappings as needed, keeps the file's comments and key
// order, validates the resulting configuration before anything is written
// (the error is a *[ValidationError] and the file is left alone), and
// replaces the file atomically. It reports whether the file changed; an
// edit that sets a value already there changes nothing. A path with an
// empty segment wraps [cas.ErrInvalid].
func Update(home string, edits []Edit, builtins Builtins) (changed bool, err error) {
	for _, e := range edits {
		if slices.Contains(strings.Split(e.Path, "."), "") {
			return false, fmt.Errorf("edit %s: %w: empty path segment in %q", File, cas.ErrInvalid, e.Path)
		}
	}
	before, err := yamldoc.ReadFile(filepath.Join(home, File), maxConfigSize)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	if err := update(home, "edit "+File, edits, builtins); err != nil {
		return false, err
	}
	after, err := yamldoc.ReadFile(filepath.Join(home, File), maxConfigSize)
	if err != nil && !(errors.Is(err, fs.ErrNotExist) && before == nil) {
		return false, err
	}
	return !bytes.Equal(before, after), nil
}

// update makes edits to <home>/config.yaml; op begins its error messages
// ("config set agents.coder.timeout"). The paths have no empty segment.
func update(home, op string, edits []Edit, builtins Builtins) error {
	file := filepath.Join(home, File)
	data, err := yamldoc.ReadFile(file, maxConfigSize)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	perm := fs.FileMode(0o600)
	if fi, err := os.Stat(file); err == nil {
		perm = fi.Mode().Perm()
	}
	var doc yaml.Node
	if parsed, err := cas.ParseYAMLNode(data); err != nil {
		_, perr := Parse(file, data, builtins)
		if perr == nil {
			perr = err
		}
		return fmt.Errorf("%s: %w", op, perr)
	} else if parsed != nil {
		doc = *parsed
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		root := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		if c := strings.TrimSpace(string(data)); c != "" {
			root.HeadComment = c // a file of comments only
		}
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		*root = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", HeadComment: root.HeadComment}
	}
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("%s: %w: %s is not a mapping", op, cas.ErrInvalid, file)
	}
	same := true
	for _, e := range edits {
		set := setNode
		if e.Delete {
			set = deleteNode
		}
		did, err := set(root, strings.Split(e.Path, "."), e)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		same = same && !did
	}
	if same { // nothing to write: the file stays byte for byte (or absent), if valid
		if _, err := Parse(file, data, builtins); err != nil {
			return fmt.Errorf("%s: the result would be invalid: %w", op, err)
		}
		return nil
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if _, err := Parse(file, buf.Bytes(), builtins); err != nil {
		return fmt.Errorf("%s: the result would be invalid: %w", op, err)
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	// Written beside it, synced, renamed over it, the folder synced; created
	// with its mode, so a 0600 file holding secrets is never readable wider.
	return atomicfile.ReplacePerm(atomicfile.OS, "", file, buf.Bytes(), perm, true)
}

// setNode makes the edit e at the path segs under the mapping root,
// creating intermediate mappings. It reports whether it changed anything.
func setNode(root *yaml.Node, segs []string, e Edit) (bool, error) {
	val := yamlValue(e.Value)
	cur := root
	for i, seg := range segs {
		last := i == len(segs)-1
		var v *yaml.Node
		for j := 0; j+1 < len(cur.Content); j += 2 {
			if k := yamldoc.Resolve(cur.Content[j]); k != nil && k.Value == seg {
				v = cur.Content[j+1]
			}
		}
		if v == nil {
			v = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			if last {
				v = val
			}
			if len(cur.Content) == 0 {
				cur.Style &^= yaml.FlowStyle // "{}" grows into a block mapping
			}
			key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: seg}
			if last && e.Comment != "" {
				key.HeadComment = e.Comment
			}
			cur.Content = append(cur.Content, key, v)
			cur = v
			continue
		}
		if last {
			if e.IfUnset || sameValue(v, val) {
				return false, nil
			}
			hc, lc, fc := v.HeadComment, v.LineComment, v.FootComment
			*v = *val
			v.HeadComment, v.LineComment, v.FootComment = hc, lc, fc
			break
		}
		if v.Kind == yaml.AliasNode {
			return false, fmt.Errorf("%w: %s is an alias; edit the anchor instead", cas.ErrInvalid, strings.Join(segs[:i+1], "."))
		}
		if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" {
			hc, lc, fc := v.HeadComment, v.LineComment, v.FootComment
			*v = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", HeadComment: hc, LineComment: lc, FootComment: fc}
		}
		if v.Kind != yaml.MappingNode {
			return false, fmt.Errorf("%w: %s is %s, not a mapping", cas.ErrInvalid, strings.Join(segs[:i+1], "."), yamldoc.Describe(v))
		}
		cur = v
	}
	return true, nil
}

// deleteNode removes the key at the path segs under the mapping root (the
// edit e is a Delete). It reports whether it changed anything: a path that
// is not there (a missing key, or a value on the way that is null) changes
// nothing; one that goes through a value that is not a mapping is an error.
func deleteNode(root *yaml.Node, segs []string, _ Edit) (bool, error) {
	cur := root
	for i, seg := range segs {
		at := -1
		for j := 0; j+1 < len(cur.Content); j += 2 {
			if k := yamldoc.Resolve(cur.Content[j]); k != nil && k.Value == seg {
				at = j
			}
		}
		if at < 0 {
			return false, nil
		}
		if i == len(segs)-1 {
			key := cur.Content[at]
			cur.Content = slices.Delete(cur.Content, at, at+2)
			// The comment above the key may be about what follows it (a
			// section's heading): keep it, above the next key or at the
			// mapping's end. The one on the key's line goes with it.
			if hc := key.HeadComment; hc != "" {
				if at < len(cur.Content) {
					next := cur.Content[at]
					next.HeadComment = joinComments(hc, next.HeadComment)
				} else if at > 0 {
					// Below the last key's value, without a blank line.
					prev := cur.Content[at-2]
					prev.FootComment = joinComments(prev.FootComment, hc)
				} else {
					cur.FootComment = joinComments(hc, cur.FootComment)
				}
			}
			if len(cur.Content) == 0 && cur != root {
				cur.Style |= yaml.FlowStyle // an emptied mapping reads "{}"
			}
			return true, nil
		}
		v := cur.Content[at+1]
		if v.Kind == yaml.AliasNode {
			return false, fmt.Errorf("%w: %s is an alias; edit the anchor instead", cas.ErrInvalid, strings.Join(segs[:i+1], "."))
		}
		if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" {
			return false, nil
		}
		if v.Kind != yaml.MappingNode {
			return false, fmt.Errorf("%w: %s is %s, not a mapping", cas.ErrInvalid, strings.Join(segs[:i+1], "."), yamldoc.Describe(v))
		}
		cur = v
	}
	return false, nil
}

// joinComments puts the comment a above b.
func joinComments(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "\n" + b
}

// sameValue reports whether the existing scalar v already holds what val
// would set (so re-running an edit leaves the file alone).
func sameValue(v, val *yaml.Node) bool {
	v = yamldoc.Resolve(v)
	return v != nil && v.Kind == yaml.ScalarNode && val.Kind == yaml.ScalarNode &&
		v.Value == val.Value && v.ShortTag() == val.ShortTag()
}

// SetEnv sets the variable name to value in <home>/.env, line by line: the
// last line that assigns name (with or without "export ") gets the new
// value, keeping its "export " and its comment; without one, a line is
// added at the end. Every other line, comments and blank lines included,
// stays as it is. The file is written with mode 0600 (an existing file
// readable more widely is narrowed to it), atomically, and the home
// directory is created as needed. It reports whether the file changed.
//
// The value is written bare if it is plain (letters, digits and
// -_./:+=@,%~), else single-quoted, else double-quoted with escapes; it
// reads back as given. An invalid name, or a value with a NUL byte, wraps
// [cas.ErrInvalid]; an .env that does not parse is a *[ValidationError]
// and is left alone. The value is never part of an error.
func SetEnv(home, name, value string) (changed bool, err error) {
	if !validEnvName(name) {
		return false, fmt.Errorf("set %s in %s: %w: invalid variable name", strconv.Quote(name), EnvFile, cas.ErrInvalid)
	}
	if strings.ContainsRune(value, 0) {
		return false, fmt.Errorf("set %s in %s: %w: the value holds a NUL byte", name, EnvFile, cas.ErrInvalid)
	}
	file := filepath.Join(home, EnvFile)
	data, err := yamldoc.ReadFile(file, maxConfigSize)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	old, err := parseDotEnv(file, data)
	if err != nil {
		return false, fmt.Errorf("set %s in %s: %w", name, EnvFile, err)
	}
	lines := strings.Split(string(data), "\n")
	at := -1
	for i, line := range lines {
		if k, _, _, ok := dotEnvAssign(line); ok && k == name {
			at = i
		}
	}
	assign := name + "=" + dotEnvQuote(value)
	if at >= 0 {
		_, export, comment, _ := dotEnvAssign(lines[at])
		if export {
			assign = "export " + assign
		}
		if comment != "" {
			assign += " " + comment
		}
		lines[at] = assign
	} else {
		if n := len(lines); n > 0 && lines[n-1] == "" {
			lines = lines[:n-1]
		}
		lines = append(lines, assign, "")
	}
	out := []byte(strings.Join(lines, "\n"))
	env, err := parseDotEnv(file, out)
	if err != nil || env[name] != value {
		return false, fmt.Errorf("set %s in %s: %w: the value would not read back as given", name, EnvFile, cas.ErrInvalid)
	}
	fi, statErr := os.Stat(file)
	if v, ok := old[name]; ok && v == value && bytes.Equal(out, data) && statErr == nil && fi.Mode().Perm() == 0o600 {
		return false, nil
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return false, err
	}
	if err := atomicfile.ReplacePerm(atomicfile.OS, "", file, out, 0o600, true); err != nil {
		return false, err
	}
	return true, nil
}

// dotEnvAssign reads a line of .env as parseDotEnv does: the variable it
// assigns, whether it starts with "export ", and its trailing comment ("#
// ..."). ok is false for a blank line, a comment or a bad line.
func dotEnvAssign(line string) (key string, export bool, comment string, ok bool) {
	s := strings.TrimSpace(strings.TrimPrefix(strings.TrimSuffix(line, "\r"), "\uFEFF"))
	if s == "" || s[0] == '#' {
		return "", false, "", false
	}
	if rest, cut := strings.CutPrefix(s, "export"); cut && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
		s, export = strings.TrimSpace(rest), true
	}
	key, raw, found := strings.Cut(s, "=")
	key = strings.TrimSpace(key)
	if !found || !validEnvName(key) {
		return "", false, "", false
	}
	raw = strings.TrimSpace(raw)
	end := len(raw) // where the value ends
	switch {
	case raw == "":
	case raw[0] == '\'':
		if i := strings.IndexByte(raw[1:], '\''); i >= 0 {
			end = i + 2
		}
	case raw[0] == '"':
		for i := 1; i < len(raw); i++ {
			if raw[i] == '\\' {
				i++
			} else if raw[i] == '"' {
				end = i + 1
				break
			}
		}
	default:
		for _, sep := range []string{" #", "\t#"} {
			if i := strings.Index(raw, sep); i >= 0 && i < end {
				end = i
			}
		}
	}
	if c := strings.TrimSpace(raw[end:]); strings.HasPrefix(c, "#") {
		comment = c
	}
	return key, export, comment, true
}

// dotEnvQuote writes value so that parseDotEnv reads it back.
func dotEnvQuote(value string) string {
	plain := value != ""
	for _, r := range value {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:+=@,%~", r)) {
			plain = false
			break
		}
	}
	switch {
	case plain:
		return value
	case !strings.ContainsAny(value, "'\n\r"):
		return "'" + value + "'"
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`, "\n", `\n`, "\r", `\r`, "\t", `\t`)
	return `"` + r.Replace(value) + `"`
}
