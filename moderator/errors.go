package moderator

import (
	"errors"
	"strconv"
	"strings"
)

// These errors can occur when routing or rendering. The returned error is
// always an [*Error] whose Unwrap gives one of them, so callers test with
// [errors.Is] and read the details with [errors.As].
var (
	// ErrUnknownRole is returned by [Route] when the graph has no entry for
	// the last role.
	ErrUnknownRole = errors.New("moderator: unknown role")
	// ErrUnknownStatus is returned by [Route] when the last role has no edge
	// for the status its output carries.
	ErrUnknownStatus = errors.New("moderator: unknown status")
	// ErrNoStatus is returned by [Route] when the last output is not an
	// object, has no "status" field, or has one that is not a string (YAML
	// reads an unquoted true, null or 1.10 as something else).
	ErrNoStatus = errors.New("moderator: output has no string status")
	// ErrMissingField is returned by [Route] and [Render] when a template
	// names a field that the output lacks.
	ErrMissingField = errors.New("moderator: template field missing from output")
	// ErrBadTemplate is returned by [Route], [Render] and [Fields] when a
	// template has an unclosed "{{", an empty field or a malformed path.
	ErrBadTemplate = errors.New("moderator: bad template")
)

// ErrorKind says which of the sentinel errors an [*Error] is.
type ErrorKind int

// The kinds of [*Error], one per sentinel error.
const (
	KindUnknownRole   ErrorKind = iota + 1 // wraps [ErrUnknownRole]
	KindUnknownStatus                      // wraps [ErrUnknownStatus]
	KindNoStatus                           // wraps [ErrNoStatus]
	KindMissingField                       // wraps [ErrMissingField]
	KindBadTemplate                        // wraps [ErrBadTemplate]
)

// String returns the kind's name, such as "unknown status".
func (k ErrorKind) String() string {
	switch k {
	case KindUnknownRole:
		return "unknown role"
	case KindUnknownStatus:
		return "unknown status"
	case KindNoStatus:
		return "no status"
	case KindMissingField:
		return "missing field"
	case KindBadTemplate:
		return "bad template"
	}
	return "ErrorKind(" + strconv.Itoa(int(k)) + ")"
}

// Error describes a routing or rendering failure. Its message names the role,
// the status and the field involved; Unwrap returns the sentinel error of its
// Kind.
type Error struct {
	Kind   ErrorKind
	Role   string // the last role; "" when the error comes from Render or Fields alone
	Status string // the status routed on; "" if unknown or not yet read
	Field  string // the template field path (KindMissingField, and KindBadTemplate when one was read)
	// Known lists, sorted, the roles of the graph (KindUnknownRole) or the
	// statuses the role has edges for (KindUnknownStatus).
	Known []string
	// Offset is the byte offset in the template of the "{{" at fault
	// (KindMissingField, KindBadTemplate).
	Offset int
	// Detail is a human explanation: why a field is missing, what the status
	// was instead of a string, what is wrong with a template.
	Detail string
}

// Error returns the message, for example
//
//	moderator: role "reviewer" has no edge for status "maybe" (known: approved, rejected)
//	moderator: edge reviewer/approved: template field "comments" missing from output
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("moderator: ")
	switch e.Kind {
	case KindUnknownRole:
		b.WriteString("role " + strconv.Quote(e.Role))
		if e.Status != "" {
			b.WriteString(" (status " + strconv.Quote(e.Status) + ")")
		}
		b.WriteString(" is not in the graph (known: " + known(e.Known) + ")")
	case KindUnknownStatus:
		b.WriteString("role " + strconv.Quote(e.Role) + " has no edge for status " + strconv.Quote(e.Status))
		b.WriteString(" (known: " + known(e.Known) + ")")
	case KindNoStatus:
		b.WriteString("output of role " + strconv.Quote(e.Role) + " " + e.Detail)
	case KindMissingField:
		e.edge(&b)
		b.WriteString("template field " + strconv.Quote(e.Field) + " missing from output")
		if e.Detail != "" {
			b.WriteString(" (" + e.Detail + ")")
		}
	case KindBadTemplate:
		e.edge(&b)
		b.WriteString("bad template at offset " + strconv.Itoa(e.Offset) + ": " + e.Detail)
	default:
		b.WriteString(e.Kind.String())
		if e.Detail != "" {
			b.WriteString(": " + e.Detail)
		}
	}
	return b.String()
}

// edge writes the "edge role/status: " prefix when the error came from Route.
func (e *Error) edge(b *strings.Builder) {
	if e.Role != "" || e.Status != "" {
		b.WriteString("edge " + e.Role + "/" + e.Status + ": ")
	}
}

// Unwrap returns the sentinel error of e.Kind, or nil for an unknown kind.
func (e *Error) Unwrap() error {
	switch e.Kind {
	case KindUnknownRole:
		return ErrUnknownRole
	case KindUnknownStatus:
		return ErrUnknownStatus
	case KindNoStatus:
		return ErrNoStatus
	case KindMissingField:
		return ErrMissingField
	case KindBadTemplate:
		return ErrBadTemplate
	}
	return nil
}

func known(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
