package stats

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Charts are drawn as small self-contained SVG documents (no script, no
// external font or style), so an HTML page can inline them and a Markdown
// page can link them. Nothing but the standard library draws them.

const (
	chartW, chartH                       = 640, 300
	marginL, marginR, marginT, marginB   = 64, 16, 36, 64
	plotW, plotH                         = chartW - marginL - marginR, chartH - marginT - marginB
	fontAttrs                            = `font-family="sans-serif" font-size="11"`
	refColor, axisColor, gridColor, text = "#c0392b", "#555", "#e5e5e5", "#222"
)

// palette colours the series, in order.
var palette = []string{"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948"}

// Bars is a bar chart: a group of bars per label, one per series, side
// by side, or stacked when Stacked (for shares that add up to 1).
type Bars struct {
	Title  string
	Unit   string // the value axis's label
	Labels []string
	// Tips, when set, are the labels' longer names, for the bars'
	// tooltips (a call's number under its bar, its tool in the tooltip).
	Tips   []string
	Series []Series
	// Stacked stacks the series of a label into one bar.
	Stacked bool
	// Ref, when RefLabel is set, draws a dashed line at Ref: a published
	// figure to compare with.
	Ref      float64
	RefLabel string
	// Format prints a value on its bar (nil: none printed).
	Format func(float64) string
}

// Series is one set of values, one per label.
type Series struct {
	Name   string
	Values []float64
}

// SVG draws the chart.
func (b Bars) SVG() string {
	var c canvas
	c.begin(b.Title)
	top := b.Ref
	for i := range b.Labels {
		sum := 0.0
		for _, s := range b.Series {
			v := at(s.Values, i)
			sum += v
			top = max(top, v)
		}
		if b.Stacked {
			top = max(top, sum)
		}
	}
	scale := c.axis(top, b.Unit)
	n := len(b.Labels)
	if n == 0 {
		return c.end()
	}
	groupW := float64(plotW) / float64(n)
	barW := groupW * 0.7
	// every is how often a label is written under its bars: all of them
	// while they fit (maxLabels), else every so many (the tooltips name
	// each bar).
	every := (n + maxLabels - 1) / maxLabels
	if !b.Stacked && len(b.Series) > 0 {
		barW /= float64(len(b.Series))
	}
	for i, label := range b.Labels {
		x0 := float64(marginL) + groupW*float64(i) + groupW*0.15
		base := 0.0
		for j, s := range b.Series {
			v := at(s.Values, i)
			x := x0
			if !b.Stacked {
				x = x0 + barW*float64(j)
			}
			y0, y1 := scale(base), scale(base+v)
			c.rect(x, y1, barW, y0-y1, palette[j%len(palette)], fmt.Sprintf("%s, %s: %g", tip(b.Tips, i, label), s.Name, v))
			if b.Format != nil && v != 0 && (!b.Stacked || y0-y1 > 12) {
				ty := y1 - 3
				if b.Stacked {
					ty = (y0 + y1) / 2
				}
				c.text(x+barW/2, ty, "middle", b.Format(v))
			}
			if b.Stacked {
				base += v
			}
		}
		if i%every == 0 {
			c.text(x0+groupW*0.35, float64(marginT+plotH)+14, "middle", label)
		}
	}
	if b.RefLabel != "" {
		c.ref(scale(b.Ref))
	}
	c.legend(names(b.Series), b.RefLabel)
	return c.end()
}

// Ranges draws a distribution per label: a bar from 0 to the median, a
// box from the median to the 90th percentile and a whisker to the max,
// on a log scale when Log (for times from milliseconds to minutes).
type Ranges struct {
	Title    string
	Unit     string
	Labels   []string
	Dists    []Dist
	Log      bool
	Ref      float64
	RefLabel string
	Format   func(float64) string
}

// SVG draws the chart.
func (r Ranges) SVG() string {
	var c canvas
	c.begin(r.Title)
	top := r.Ref
	bottom := math.Inf(1)
	for _, d := range r.Dists {
		top = max(top, d.Max)
		if d.N > 0 && d.Median > 0 {
			bottom = min(bottom, d.Median)
		}
	}
	var scale func(float64) float64
	if r.Log {
		scale = c.logAxis(bottom, top, r.Unit)
	} else {
		scale = c.axis(top, r.Unit)
	}
	n := len(r.Labels)
	if n == 0 {
		return c.end()
	}
	groupW := float64(plotW) / float64(n)
	w := groupW * 0.5
	for i, label := range r.Labels {
		x := float64(marginL) + groupW*float64(i) + groupW*0.25
		d := Dist{}
		if i < len(r.Dists) {
			d = r.Dists[i]
		}
		c.text(x+w/2, float64(marginT+plotH)+14, "middle", label)
		if d.N == 0 {
			continue
		}
		color := palette[0]
		ym, yp, yx := scale(d.Median), scale(d.P90), scale(d.Max)
		c.rect(x, ym, w, float64(marginT+plotH)-ym, color, fmt.Sprintf("%s median %g", label, d.Median))
		c.rect(x, yp, w, ym-yp, palette[1], fmt.Sprintf("%s p90 %g", label, d.P90))
		fmt.Fprintf(&c.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x+w/2, yp, x+w/2, yx, axisColor)
		fmt.Fprintf(&c.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", x+w/4, yx, x+3*w/4, yx, axisColor)
		if r.Format != nil {
			c.text(x+w+3, ym+4, "start", r.Format(d.Median))
		}
	}
	if r.RefLabel != "" {
		c.ref(scale(r.Ref))
	}
	c.legend([]string{"median", "median to p90 (the whisker reaches the max)"}, r.RefLabel)
	return c.end()
}

// maxLabels is how many labels fit under a chart's bars.
const maxLabels = 20

// tip is the tooltip name of label i: its tip when there is one.
func tip(tips []string, i int, label string) string {
	if i < len(tips) && tips[i] != "" {
		return tips[i]
	}
	return label
}

func at(v []float64, i int) float64 {
	if i < len(v) && !math.IsNaN(v[i]) && !math.IsInf(v[i], 0) {
		return v[i]
	}
	return 0
}

func names(ss []Series) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Name
	}
	return out
}

// canvas writes one SVG document.
type canvas struct{ b strings.Builder }

func (c *canvas) begin(title string) {
	fmt.Fprintf(&c.b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" %s>`+"\n",
		chartW, chartH, chartW, chartH, fontAttrs)
	fmt.Fprintf(&c.b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", chartW, chartH)
	fmt.Fprintf(&c.b, `<text x="%d" y="18" font-size="13" font-weight="bold" fill="%s">%s</text>`+"\n", marginL, text, esc(title))
}

func (c *canvas) end() string {
	c.b.WriteString("</svg>\n")
	return c.b.String()
}

func (c *canvas) rect(x, y, w, h float64, fill, title string) {
	if h < 0 {
		y, h = y+h, -h
	}
	fmt.Fprintf(&c.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`+"\n", x, y, w, h, fill, esc(title))
}

func (c *canvas) text(x, y float64, anchor, s string) {
	fmt.Fprintf(&c.b, `<text x="%.1f" y="%.1f" text-anchor="%s" fill="%s">%s</text>`+"\n", x, y, anchor, text, esc(s))
}

// ref draws a dashed reference line at y; the legend names it.
func (c *canvas) ref(y float64) {
	fmt.Fprintf(&c.b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-dasharray="5,3"/>`+"\n", marginL, y, marginL+plotW, y, refColor)
}

// legend names the series under the plot, and the reference line when
// ref is set.
func (c *canvas) legend(names []string, ref string) {
	x := float64(marginL)
	y := float64(chartH - 28)
	// wrap starts a second row when an entry of n characters would not fit.
	wrap := func(n string) {
		if x > marginL && x+20+6*float64(len(n)) > chartW-marginR {
			x, y = marginL, y+16
		}
	}
	for i, n := range names {
		wrap(n)
		fmt.Fprintf(&c.b, `<rect x="%.1f" y="%.1f" width="10" height="10" fill="%s"/>`+"\n", x, y-9, palette[i%len(palette)])
		c.text(x+14, y, "start", n)
		x += 24 + 6*float64(len(n))
	}
	if ref != "" {
		wrap(ref)
		fmt.Fprintf(&c.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="5,3"/>`+"\n", x, y-4, x+16, y-4, refColor)
		c.text(x+20, y, "start", ref)
	}
}

// axis draws a linear value axis from 0 to a round number above top and
// returns the scale from values to y.
func (c *canvas) axis(top float64, unit string) func(float64) float64 {
	hi, step := nice(top)
	scale := func(v float64) float64 { return float64(marginT+plotH) - v/hi*float64(plotH) }
	for v := 0.0; v <= hi*1.0001; v += step {
		c.tick(scale(v), trim(v))
	}
	c.frame(unit)
	return scale
}

// logAxis draws a log10 axis over [lo, hi] in whole decades.
func (c *canvas) logAxis(lo, hi float64, unit string) func(float64) float64 {
	if !(hi > 0) || math.IsInf(hi, 0) {
		hi = 1
	}
	if !(lo > 0) || lo > hi || math.IsInf(lo, 0) {
		lo = hi / 10
	}
	a, b := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	a = max(a, b-9) // at most nine decades
	if b <= a {
		b = a + 1
	}
	scale := func(v float64) float64 {
		if v <= 0 {
			return float64(marginT + plotH)
		}
		l := (math.Log10(v) - a) / (b - a)
		return float64(marginT+plotH) - math.Max(l, 0)*float64(plotH)
	}
	for e := a; e <= b; e++ {
		c.tick(scale(math.Pow(10, e)), trim(math.Pow(10, e)))
	}
	c.frame(unit + " (log scale)")
	return scale
}

func (c *canvas) tick(y float64, label string) {
	fmt.Fprintf(&c.b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`+"\n", marginL, y, marginL+plotW, y, gridColor)
	c.text(marginL-6, y+4, "end", label)
}

func (c *canvas) frame(unit string) {
	fmt.Fprintf(&c.b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"/>`+"\n", marginL, marginT, marginL, marginT+plotH, axisColor)
	fmt.Fprintf(&c.b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"/>`+"\n", marginL, marginT+plotH, marginL+plotW, marginT+plotH, axisColor)
	fmt.Fprintf(&c.b, `<text x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle" fill="%s">%s</text>`+"\n",
		marginT+plotH/2, marginT+plotH/2, text, esc(unit))
}

// nice returns a round top for an axis holding top, and its tick step.
func nice(top float64) (hi, step float64) {
	if top <= 0 || math.IsNaN(top) || math.IsInf(top, 0) {
		return 1, 0.25
	}
	raw := top / 4
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if step = m * mag; step >= raw {
			break
		}
	}
	return math.Ceil(top/step) * step, step
}

// trim prints an axis value without needless digits.
func trim(v float64) string {
	s := fmt.Sprintf("%.3g", v)
	if strings.Contains(s, "e") {
		s = fmt.Sprintf("%.0f", v)
	}
	return s
}

// esc makes a string from the record (an agent's, a tool's name) text of
// the SVG document: markup characters escaped, and what XML 1.0 does not
// allow in a document (control characters, invalid UTF-8) replaced, so
// the chart stays well-formed as a file and inert inside an HTML page.
func esc(s string) string {
	return html.EscapeString(strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF {
			return r
		}
		return '\uFFFD'
	}, s))
}
