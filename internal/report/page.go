package report

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/human"
)

// assets are the pages' templates, style sheet and script: embedded, so
// the binary serves and writes them without a build step or a network.
//
//go:embed assets
var assets embed.FS

// Assets are the pages' style sheet and script (timeline.css,
// timeline.js), for a server to serve.
func Assets() fs.FS {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded directory is there by construction
	}
	return sub
}

// pages is the template set of the pages: "session" (a session's
// timeline, the part a server swaps when it changes) and "report" (the
// HTML report).
var pages = newPages()

// newPages parses the pages' template set.
func newPages() *template.Template {
	return template.Must(template.New("pages").Funcs(template.FuncMap{
		"f1":       func(v float64) string { return fmt.Sprintf("%.1f", v) },
		"laneH":    func(rows int) int { return rows*13 + 4 },
		"barY":     func(y int) int { return y*13 + 3 },
		"markY":    func(y int) int { return y*13 + 2 },
		"ovY":      func(y int) int { return y*15 + 2 },
		"cut":      cut,
		"indent":   func(n int) string { return strings.Repeat("  ", n) },
		"spanText": func(ms float64) string { return time.Duration(ms * 1e6).Round(time.Millisecond).String() },
		"callIDs": func(calls []*CallRow) string {
			ids := make([]string, len(calls))
			for i, c := range calls {
				ids[i] = c.ID
			}
			return strings.Join(ids, " ")
		},
	}).ParseFS(assets, "assets/*.html"))
}

// Templates returns a new copy of the pages' template set, to which a
// server adds its own pages around "session" (a set that has executed
// cannot be added to).
func Templates() *template.Template { return newPages() }

// WriteHTML writes the report as one self-contained HTML page: the
// session's timeline, its style sheet and script inline, and a
// Content-Security-Policy that lets nothing else load, so the page is
// the same offline, attached to a ticket or opened years later.
func (r *Report) WriteHTML(w io.Writer) error {
	css, js := asset("timeline.css"), asset("timeline.js")
	csp := fmt.Sprintf("default-src 'none'; style-src '%s'; script-src '%s'; img-src data:; base-uri 'none'; form-action 'none'",
		hashSource(css), hashSource(js))
	return pages.ExecuteTemplate(w, "report", struct {
		T   *Timeline
		CSS template.CSS
		JS  template.JS
		CSP string
	}{r.Timeline(), template.CSS(css), template.JS(js), csp})
}

// WriteSession writes the session part of a page of t: what a server
// sends again when a live session changes.
func WriteSession(w io.Writer, t *Timeline) error { return pages.ExecuteTemplate(w, "session", t) }

// WriteCall writes a call's own view (what a page served with
// ServedFrom loads when the call is opened).
func WriteCall(w io.Writer, c *CallRow) error { return pages.ExecuteTemplate(w, "calldetail", c) }

// asset is the text of an embedded asset.
func asset(name string) string {
	b, err := assets.ReadFile("assets/" + name)
	if err != nil {
		panic(err) // embedded by construction
	}
	return string(b)
}

// hashSource is the CSP source that allows exactly the inline text s.
func hashSource(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// KernelLine is what the kernel saw the call do, in one line of a row.
func (c *CallRow) KernelLine() string {
	k := c.Kernel
	if k == nil {
		return "no kernel evidence"
	}
	if k.Events == 0 {
		return "nothing"
	}
	var parts []string
	if k.Processes > 0 {
		s := human.Count(k.Processes, "process", "processes")
		if k.Processes == 1 {
			s = "1 process"
		}
		switch {
		case k.Signal != 0:
			s += fmt.Sprintf(", killed by signal %d", k.Signal)
		case k.ExitCode != nil:
			s += fmt.Sprintf(", exit %d after %s", *k.ExitCode, time.Duration(k.DurationNS).Round(time.Millisecond))
		}
		parts = append(parts, s)
	} else {
		parts = append(parts, "in the agent's own process")
	}
	if n := len(k.Reads); n > 0 {
		parts = append(parts, "read "+readsText(k.Reads, 2))
	}
	if len(k.Writes) > 0 {
		parts = append(parts, "wrote "+listed(k.Writes, 2))
	}
	if len(k.Connects) > 0 {
		parts = append(parts, "connected to "+listed(k.Connects, 2))
	}
	if len(k.DNS) > 0 {
		parts = append(parts, "looked up "+listed(k.DNS, 2))
	}
	if k.Late > 0 {
		parts = append(parts, human.Count(k.Late, "event", "events")+" after it returned")
	}
	if len(k.Integrity) > 0 {
		parts = append(parts, "integrity: "+integrityLine(k.Integrity))
	}
	return strings.Join(parts, " · ")
}
