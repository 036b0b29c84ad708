// Package browsertest drives a real headless Chromium for the viewer's
// browser tests, through chromedp: one browser per test binary, one tab per
// test. A test asks for a tab with [Tab]; without a browser it skips, or
// under CI=true fails. UWF_CHROMIUM names the browser binary;
// UWF_SCREENSHOTS, if set, is a folder that keeps every screenshot (they
// are always written under the test's temp dir and named in the log).
//
// A test binary that uses it calls [Main] from its TestMain, which stops
// the browser when the tests end.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

var browser struct {
	once   sync.Once
	ctx    context.Context
	cancel func()
	err    error
}

// Path finds the browser: $UWF_CHROMIUM, else the usual names on $PATH;
// "" if there is none.
func Path() string {
	if p := os.Getenv("UWF_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// Main runs the tests and stops the browser if one was started.
func Main(m *testing.M) int {
	code := m.Run()
	if browser.cancel != nil {
		browser.cancel()
	}
	return code
}

// Tab opens a new tab of the shared browser, closed when the test ends.
// Every action in it must end within 90 s.
func Tab(t *testing.T) context.Context {
	t.Helper()
	path := Path()
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no Chromium found (set UWF_CHROMIUM or install chromium); under CI=true the browser tests must run")
		}
		t.Skip("no Chromium found: install chromium (Debian: apt-get install chromium) or set UWF_CHROMIUM to run the browser tests")
	}
	browser.once.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.WindowSize(1280, 900))
		if os.Geteuid() == 0 {
			opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with its sandbox
		}
		actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
		bctx, bcancel := chromedp.NewContext(actx)
		browser.ctx, browser.cancel = bctx, func() { bcancel(); acancel() }
		browser.err = chromedp.Do(bctx) // starts the browser
	})
	if browser.err != nil {
		t.Fatalf("start %s: %v", path, browser.err)
	}
	ctx, cancel := chromedp.NewContext(browser.ctx)
	ctx, cancel2 := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancel2(); cancel() })
	return ctx
}

// Do runs actions, failing the test with a screenshot on error.
func Do(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		Screenshot(t, ctx, "failed")
		t.Fatalf("%s: %v", what, err)
	}
}

// Eval evaluates a JavaScript expression in the page.
func Eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		Screenshot(t, ctx, "failed")
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// CSS selects by a CSS selector.
func CSS(s string) chromedp.CSS { return chromedp.CSS(s) }

// Screenshot saves the page as a PNG under the test's temp dir (and
// $UWF_SCREENSHOTS if set) and names it in the log.
func Screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	file := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + "-" + name + ".png"
	path := filepath.Join(t.TempDir(), file)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Errorf("screenshot: %v", err)
		return
	}
	t.Logf("screenshot: %s", path)
	if dir := os.Getenv("UWF_SCREENSHOTS"); dir != "" {
		_ = os.MkdirAll(dir, 0o755)
		_ = os.WriteFile(filepath.Join(dir, file), png, 0o644)
	}
}

// WaitFor polls a JavaScript expression until it is true, up to d.
func WaitFor(expr string, d time.Duration) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(d), chromedp.WithPollingInterval(100*time.Millisecond))
}

// WaitPath waits until the page has navigated to a path starting with
// prefix, tolerating the errors a navigation gives while it happens.
func WaitPath(t *testing.T, ctx context.Context, prefix string, d time.Duration) {
	t.Helper()
	WaitNav(t, ctx, fmt.Sprintf("location.pathname.startsWith(%q)", prefix), d)
}

// WaitNav waits until expr is true in the page, tolerating the errors a
// navigation gives while it happens (which [WaitFor] does not).
func WaitNav(t *testing.T, ctx context.Context, expr string, d time.Duration) {
	t.Helper()
	var last error
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expr+")"))
		if err == nil && ok {
			return
		}
		last = err
	}
	Screenshot(t, ctx, "failed")
	t.Fatalf("%s did not become true within %v (last error: %v)", expr, d, last)
}

// ColorScheme emulates the user's prefers-color-scheme ("light" or
// "dark") for the tab.
func ColorScheme(scheme string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
		})
		return err
	})
}

// HostileDOM counts elements a payload would have brought into the page.
const HostileDOM = `document.querySelectorAll('main script, main img, main iframe, main [onerror], main [onload], main meta, a[href^="javascript"]').length`

// Untouched asserts that no payload ran: nothing set window.pwned, the
// page is still at url, and no hostile element is in the DOM.
func Untouched(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	if pwned := Eval[string](t, ctx, `String(window.pwned)`); pwned != "undefined" {
		t.Errorf("a payload ran: window.pwned = %s", pwned)
	}
	if href := Eval[string](t, ctx, `location.href`); !strings.HasPrefix(href, url) {
		t.Errorf("the page navigated to %s, want %s", href, url)
	}
	if bad := Eval[int](t, ctx, HostileDOM); bad != 0 {
		t.Errorf("%d hostile elements made it into the DOM of %s", bad, url)
	}
}
