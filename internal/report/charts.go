package report

import (
	"html/template"
	"strings"
)

// Chart is a chart of the session for its pages: an SVG document drawn
// by package stats (which measures the session from its analysis, and
// which report cannot import: stats reads analysis, which builds
// reports), handed in by whoever has both (SetCharts). Name is its
// anchor on the page.
type Chart struct {
	Name, Title string
	// SVG is a self-contained SVG document whose every string from the
	// record its drawer escaped: a page holds it as it is.
	SVG template.HTML
}

// SetCharts gives the report the session's charts, which its pages show
// (the HTML report, polygraph ui) and its text and JSON do not. A chart
// that is not an SVG document, or that holds a script or foreign markup,
// is left out: the drawer escapes what it writes, and this keeps a page
// safe if it ever failed to.
func (r *Report) SetCharts(charts []Chart) {
	r.charts = r.charts[:0]
	for _, c := range charts {
		low := strings.ToLower(string(c.SVG))
		if !strings.HasPrefix(low, "<svg ") || strings.Contains(low, "<script") || strings.Contains(low, "<foreignobject") || strings.Count(low, "<svg") != 1 {
			continue
		}
		r.charts = append(r.charts, c)
	}
	if r.timeline != nil {
		r.timeline.Charts = r.charts
	}
}
