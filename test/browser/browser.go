// Package browser drives a real headless Chromium (Debian's chromium
// package, found by testenv.Chromium) with chromedp for the tests of
// polygraph ui's pages. It starts the browser with a fresh profile and
// every flag that keeps it from reaching out on its own (this machine's
// network is closed, and a test must not depend on it), records every
// request the pages make and everything they log as an error, and saves
// screenshots outside the repository for a person to look at.
package browser

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/polygraph/polygraph/internal/testenv"
)

// Browser is one headless Chromium with one tab, for one test.
type Browser struct {
	// Ctx runs actions in the tab (chromedp.Run(b.Ctx, ...)).
	Ctx context.Context
	// profile is the browser's user data directory, which names its
	// processes (CPU).
	profile string

	mu       sync.Mutex
	requests []string
	problems []string
}

// ShotsDir is where screenshots go: $POLYGRAPH_UI_SHOTS, else
// /tmp/polygraph-ui-shots.
func ShotsDir() string {
	if d := os.Getenv("POLYGRAPH_UI_SHOTS"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "polygraph-ui-shots")
}

// Start starts the browser; the test's cleanup stops it. The window is
// width × height (0: 1400 × 1000).
func Start(t testing.TB, width, height int) *Browser {
	t.Helper()
	exe := testenv.Chromium(t)
	if width == 0 {
		width, height = 1400, 1000
	}
	profile := t.TempDir()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(width, height),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("mute-audio", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &Browser{Ctx: ctx, profile: profile}
	// The first Do starts the browser and binds it to ctx: no timeout.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium %s: %v", exe, err)
	}
	requests := chromedp.Events(ctx, network.RequestWillBeSent)
	console := chromedp.Events(ctx, runtime.ConsoleAPICalled)
	exceptions := chromedp.Events(ctx, runtime.ExceptionThrown)
	logs := chromedp.Events(ctx, log.EntryAdded)
	go func() {
		for ev, err := range requests {
			if err != nil {
				return
			}
			b.note(&b.requests, ev.Request.URL)
		}
	}()
	go func() {
		for ev, err := range console {
			if err != nil {
				return
			}
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				b.note(&b.problems, "console."+string(ev.Type)+": "+strings.Join(args, " "))
			}
		}
	}()
	go func() {
		for ev, err := range exceptions {
			if err != nil {
				return
			}
			d := ev.ExceptionDetails
			b.note(&b.problems, fmt.Sprintf("exception: %s at %s:%d", d.Text, d.URL, d.LineNumber))
		}
	}()
	go func() {
		for ev, err := range logs {
			if err != nil {
				return
			}
			if ev.Entry.Level == log.EntryLevelError {
				b.note(&b.problems, fmt.Sprintf("log %s: %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
			}
		}
	}()
	start, done := context.WithTimeout(ctx, 30*time.Second)
	defer done()
	for _, err := range []error{
		call(start, network.Enable, network.EnableParams{}),
		call(start, log.Enable, cdp.Empty{}),
		call(start, runtime.Enable, cdp.Empty{}),
	} {
		if err != nil {
			t.Fatalf("chromium: %v", err)
		}
	}
	return b
}

// call runs a protocol command on the tab, for its error.
func call[P, R any](ctx context.Context, cmd cdp.Command[P, R], params P) error {
	_, err := chromedp.Call(ctx, cmd, params)
	return err
}

// note appends s to a list under the lock.
func (b *Browser) note(list *[]string, s string) {
	b.mu.Lock()
	*list = append(*list, s)
	b.mu.Unlock()
}

// Do runs actions in the tab, failing the test on an error; it gives up
// after timeout.
func (b *Browser) Do(t testing.TB, timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// Eval evaluates a JavaScript expression in the page.
func Eval[T any](t testing.TB, b *Browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("browser: evaluate %s: %v", expr, err)
	}
	return v
}

// Until waits until the JavaScript expression is true in the page, at
// most timeout, and reports whether it came true. It asks every 20 ms,
// and through navigations (an evaluation that fails while a page loads
// is asked again).
func (b *Browser) Until(expr string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(b.Ctx, 2*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		cancel()
		if err == nil && ok {
			return true
		}
		if time.Now().After(deadline) || b.Ctx.Err() != nil {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Requests are the URLs the pages asked for, in order.
func (b *Browser) Requests() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.requests...)
}

// Check fails the test for any request that left loopback and anything a
// page logged as an error (a script exception, a console error, a
// resource the CSP or the network refused).
func (b *Browser) Check(t testing.TB) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range b.requests {
		u, err := url.Parse(r)
		if err != nil {
			t.Errorf("a request to an unparsable URL %q", r)
			continue
		}
		switch u.Scheme {
		case "data", "about", "blob":
			continue
		}
		if h := u.Hostname(); h != "127.0.0.1" && h != "localhost" && h != "::1" {
			t.Errorf("a request left loopback: %s", r)
		}
	}
	for _, p := range b.problems {
		t.Errorf("the page logged an error: %s", p)
	}
}

// Shot saves a screenshot of the whole page as ShotsDir()/name.png and
// returns its path.
func (b *Browser) Shot(t testing.TB, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, 60*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := ShotsDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
	return p
}

// Visible is the expression true when the element sel selects is shown
// (rendered, not hidden by a filter).
func Visible(sel string) string {
	return fmt.Sprintf(`(function(){var e=document.querySelector(%q);return !!e && e.getClientRects().length>0;})()`, sel)
}

// CPU is the processor time the browser's processes have used so far
// (user and system, every process started with its profile: the browser,
// its renderers, its GPU and network services): what a page costs the
// machine, whatever else runs on it, as its wall time does not.
func (b *Browser) CPU() time.Duration {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	tick := 100 // USER_HZ, as Linux reports it in /proc/PID/stat
	var total uint64
	for _, e := range ents {
		pid := e.Name()
		if pid[0] < '0' || pid[0] > '9' {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + pid + "/cmdline")
		if err != nil || !strings.Contains(string(cmd), b.profile) {
			continue
		}
		st, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			continue
		}
		// The fields after the command's closing parenthesis: state is
		// the first, utime and stime the 12th and 13th.
		f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
		if len(f) < 13 {
			continue
		}
		var u, s uint64
		fmt.Sscan(f[11], &u)
		fmt.Sscan(f[12], &s)
		total += u + s
	}
	return time.Duration(total) * time.Second / time.Duration(tick)
}
