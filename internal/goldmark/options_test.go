package goldmark_test

import (
	"testing"

	. "github.com/uncaged/uwf/internal/goldmark"
	"github.com/uncaged/uwf/internal/goldmark/parser"
	"github.com/uncaged/uwf/internal/goldmark/testutil"
)

func TestAttributeAndAutoHeadingID(t *testing.T) {
	markdown := New(
		WithParserOptions(
			parser.WithAttribute(),
			parser.WithAutoHeadingID(),
		),
	)
	testutil.DoTestCaseFile(markdown, "testdata/options.txt", t, testutil.ParseCliCaseArg()...)
}
