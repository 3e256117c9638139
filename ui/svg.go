package ui

import (
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/memex-dev/memex/core"
)

// The charts are inline SVG written on the server. Each mark carries its
// number in data-* attributes (and a <title> tooltip), so what a chart
// shows can be read back exactly — the browser tests compare them with the
// admin API.

const (
	chartW = 480
	chartH = 160
	padL   = 36
	padB   = 22
	padT   = 8
)

func esc(s string) string { return template.HTMLEscapeString(s) }

// yAxis writes the max label and a baseline.
func yAxis(b *strings.Builder, top int64) {
	fmt.Fprintf(b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, padL, chartH-padB, chartW, chartH-padB)
	fmt.Fprintf(b, `<text class="tick" x="%d" y="%d" text-anchor="end">%d</text>`, padL-4, padT+8, top)
	fmt.Fprintf(b, `<text class="tick" x="%d" y="%d" text-anchor="end">0</text>`, padL-4, chartH-padB)
}

func svgOpen(b *strings.Builder, id, label string) {
	fmt.Fprintf(b, `<svg id="%s" class="chart" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s"><title>%s</title>`,
		esc(id), chartW, chartH, chartW, chartH, esc(label), esc(label))
}

// histogramSVG draws the trust histogram: ten buckets of 0.1.
func histogramSVG(id string, buckets []int) template.HTML {
	var b strings.Builder
	svgOpen(&b, id, "trust histogram: QAs per trust bucket of 0.1")
	top := int64(1)
	for _, n := range buckets {
		top = max(top, int64(n))
	}
	yAxis(&b, top)
	plotH := float64(chartH - padB - padT)
	bw := float64(chartW-padL) / float64(max(len(buckets), 1))
	for i, n := range buckets {
		h := plotH * float64(n) / float64(top)
		x := float64(padL) + float64(i)*bw
		lo := float64(i) / 10
		fmt.Fprintf(&b, `<rect class="bar t%d" data-bucket="%d" data-count="%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>trust %.1f–%.1f: %d QAs</title></rect>`,
			i, i, n, x+2, float64(chartH-padB)-h, bw-4, h, lo, lo+0.1, n)
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%d" text-anchor="middle">%.1f</text>`, x+bw/2, chartH-6, lo)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// lastDays is the n days ending today (UTC), oldest first, with the
// counts of days (missing days are zero).
func lastDays(days []core.DayCount, now time.Time, n int) []core.DayCount {
	by := make(map[string]core.DayCount, len(days))
	for _, d := range days {
		by[d.Day] = d
	}
	out := make([]core.DayCount, n)
	today := now.UTC().Truncate(24 * time.Hour)
	for i := range n {
		day := today.AddDate(0, 0, i-n+1).Format("2006-01-02")
		d, ok := by[day]
		if !ok {
			d = core.DayCount{Day: day}
		}
		out[i] = d
	}
	return out
}

// daysSVG draws validations per day: passes stacked under fails.
func daysSVG(id string, days []core.DayCount) template.HTML {
	var b strings.Builder
	svgOpen(&b, id, "validations per day: passes (green) and fails (red)")
	top := int64(1)
	for _, d := range days {
		top = max(top, d.Passes+d.Fails)
	}
	yAxis(&b, top)
	plotH := float64(chartH - padB - padT)
	bw := float64(chartW-padL) / float64(max(len(days), 1))
	for i, d := range days {
		x := float64(padL) + float64(i)*bw
		hp := plotH * float64(d.Passes) / float64(top)
		hf := plotH * float64(d.Fails) / float64(top)
		base := float64(chartH - padB)
		fmt.Fprintf(&b, `<g class="day" data-day="%s" data-passes="%d" data-fails="%d"><title>%s: %d pass, %d fail</title>`,
			esc(d.Day), d.Passes, d.Fails, esc(d.Day), d.Passes, d.Fails)
		fmt.Fprintf(&b, `<rect class="pass" x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`, x+1, base-hp, max(bw-2, 1), hp)
		fmt.Fprintf(&b, `<rect class="fail" x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`, x+1, base-hp-hf, max(bw-2, 1), hf)
		b.WriteString(`</g>`)
		if i == 0 || i == len(days)-1 {
			anchor := "start"
			if i > 0 {
				anchor = "end"
			}
			tx := x
			if i > 0 {
				tx = x + bw
			}
			fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%d" text-anchor="%s">%s</text>`, tx, chartH-6, anchor, esc(d.Day))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// countsSVG draws one horizontal bar per label.
func countsSVG(id, label string, labels []string, counts []int) template.HTML {
	var b strings.Builder
	rowH := 22
	h := rowH*len(labels) + 4
	fmt.Fprintf(&b, `<svg id="%s" class="chart counts" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s"><title>%s</title>`,
		esc(id), chartW, h, chartW, h, esc(label), esc(label))
	top := 1
	for _, n := range counts {
		top = max(top, n)
	}
	const lw = 90
	for i, l := range labels {
		y := i*rowH + 2
		w := float64(chartW-lw-60) * float64(counts[i]) / float64(top)
		fmt.Fprintf(&b, `<g class="count" data-label="%s" data-count="%d"><title>%s: %d</title>`, esc(l), counts[i], esc(l), counts[i])
		fmt.Fprintf(&b, `<text class="tick" x="%d" y="%d" text-anchor="end">%s</text>`, lw-6, y+15, esc(l))
		fmt.Fprintf(&b, `<rect class="bar s-%s" x="%d" y="%d" width="%.1f" height="%d"/>`, esc(l), lw, y+2, w, rowH-6)
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%d">%d</text>`, float64(lw)+w+6, y+15, counts[i])
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// trustPoint is the trust of a QA at one time.
type trustPoint struct {
	T     time.Time
	Trust float64
	What  string
}

// trustSVG draws a QA's trust over time (0–1) as a line with a dot per
// change.
func trustSVG(id string, pts []trustPoint) template.HTML {
	var b strings.Builder
	svgOpen(&b, id, "trust over time (0 to 1)")
	fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, padL, chartH-padB, chartW, chartH-padB)
	fmt.Fprintf(&b, `<text class="tick" x="%d" y="%d" text-anchor="end">1.0</text>`, padL-4, padT+8)
	fmt.Fprintf(&b, `<text class="tick" x="%d" y="%d" text-anchor="end">0</text>`, padL-4, chartH-padB)
	if len(pts) == 0 {
		fmt.Fprintf(&b, `<text class="tick" x="%d" y="%d" text-anchor="middle">no trust changes recorded</text>`, (chartW+padL)/2, chartH/2)
		b.WriteString(`</svg>`)
		return template.HTML(b.String())
	}
	t0, t1 := pts[0].T, pts[len(pts)-1].T
	span := t1.Sub(t0).Seconds()
	plotW := float64(chartW - padL - 12)
	plotH := float64(chartH - padB - padT)
	xy := func(i int) (float64, float64) {
		x := float64(padL) + 6
		if span > 0 {
			x += plotW * pts[i].T.Sub(t0).Seconds() / span
		} else if len(pts) > 1 {
			x += plotW * float64(i) / float64(len(pts)-1)
		}
		return x, float64(chartH-padB) - plotH*min(max(pts[i].Trust, 0), 1)
	}
	b.WriteString(`<polyline class="line" points="`)
	for i := range pts {
		x, y := xy(i)
		fmt.Fprintf(&b, "%.1f,%.1f ", x, y)
	}
	b.WriteString(`"/>`)
	for i, p := range pts {
		x, y := xy(i)
		ts := p.T.UTC().Format(time.RFC3339)
		fmt.Fprintf(&b, `<circle class="dot" data-time="%s" data-trust="%s" cx="%.1f" cy="%.1f" r="3"><title>%s %s: trust %s</title></circle>`,
			esc(ts), strconv.FormatFloat(p.Trust, 'f', 4, 64), x, y, esc(ts), esc(p.What), strconv.FormatFloat(p.Trust, 'f', 3, 64))
	}
	fmt.Fprintf(&b, `<text class="tick" x="%d" y="%d">%s</text>`, padL, chartH-6, esc(t0.UTC().Format("2006-01-02 15:04")))
	fmt.Fprintf(&b, `<text class="tick" x="%d" y="%d" text-anchor="end">%s</text>`, chartW, chartH-6, esc(t1.UTC().Format("2006-01-02 15:04")))
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
