package gfm

import (
	"testing"

	"github.com/uncaged/uwf/internal/goldmark"
	"github.com/uncaged/uwf/internal/goldmark/renderer/html"
	"github.com/uncaged/uwf/internal/goldmark/testutil"
)

func TestStrikethrough(t *testing.T) {
	markdown := goldmark.New(
		goldmark.WithRendererOptions(
			html.WithUnsafe(),
		),
		goldmark.WithExtensions(
			Strikethrough,
		),
	)
	testutil.DoTestCaseFile(markdown, "testdata/strikethrough.txt", t, testutil.ParseCliCaseArg()...)
}
