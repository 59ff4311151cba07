package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestCharts: the charts handed to a report are on its HTML page, inline,
// under the findings; one that is not a lone SVG document, or holds a
// script or foreign markup, is left out; the text and JSON forms hold
// none.
func TestCharts(t *testing.T) {
	r := fullReport()
	r.SetCharts([]Chart{
		{Name: "session-time", Title: "time", SVG: `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><rect width="4" height="4"><title>in tool calls, seconds: 1.5</title></rect></svg>`},
		{Name: "bad-script", SVG: `<svg xmlns="http://www.w3.org/2000/svg"><SCRIPT>alert(1)</SCRIPT></svg>`},
		{Name: "bad-foreign", SVG: `<svg xmlns="http://www.w3.org/2000/svg"><foreignObject><iframe></iframe></foreignObject></svg>`},
		{Name: "bad-two", SVG: `<svg x="1"></svg><svg onload="alert(1)"></svg>`},
		{Name: "bad-html", SVG: `<img src=x onerror=alert(1)>`},
	})
	var b bytes.Buffer
	if err := r.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if !strings.Contains(page, `<figure class="chart" id="chart-session-time"><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10">`) {
		t.Errorf("the chart is not inline on the page:\n%s", page)
	}
	if strings.Index(page, `id="numbers"`) < strings.Index(page, `id="findings"`) {
		t.Error("the charts are not under the findings")
	}
	for _, bad := range []string{"bad-", "alert(1)", "<iframe", "<img"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	if n := len(r.Timeline().Charts); n != 1 {
		t.Errorf("the timeline has %d charts, want 1", n)
	}
	for _, format := range []string{"text", "json"} {
		b.Reset()
		if err := r.Write(&b, format); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "<svg") || strings.Contains(b.String(), "session-time") {
			t.Errorf("the %s report holds a chart", format)
		}
	}
	// Without charts, no section.
	b.Reset()
	if err := fullReport().WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `id="numbers"`) {
		t.Error("a report without charts has a Numbers section")
	}
}
