package gfm

import (
	"testing"

	"github.com/uncaged/uwf/internal/goldmark"
	"github.com/uncaged/uwf/internal/goldmark/renderer/html"
	"github.com/uncaged/uwf/internal/goldmark/testutil"
)

func TestTaskList(t *testing.T) {
	markdown := goldmark.New(
		goldmark.WithRendererOptions(
			html.WithUnsafe(),
		),
		goldmark.WithExtensions(
			TaskList,
		),
	)
	testutil.DoTestCaseFile(markdown, "testdata/tasklist.txt", t, testutil.ParseCliCaseArg()...)
}
