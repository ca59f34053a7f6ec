package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// The charts are plain SVG written here: horizontal bars with min–max
// whiskers for throughput, markers on a logarithmic axis for delays.

const (
	svgWidth  = 900
	svgLabelW = 340
	svgRight  = 70
	svgRowH   = 18
)

type bar struct {
	label string
	s     spread
	color string
	gap   bool
}

// throughputSVG draws, per peer, its drain rate and its sustained
// published rate (medians, min–max whiskers).
func throughputSVG(r *Results) string {
	var groups [][]bar
	for _, pr := range r.Peers {
		if pr.Gap != "" {
			groups = append(groups, []bar{{label: pr.Label + " (gap: could not run)", gap: true}})
			continue
		}
		drain := ", drain"
		for _, s := range pr.Drain {
			if s.Partial {
				drain = ", drain (partial: budget)"
			}
		}
		groups = append(groups, []bar{
			{label: pr.Label + drain, color: "#3b6ea8",
				s: figure(pr.Drain, drainOK, func(s DrainSample) float64 { return s.Rate })},
			{label: pr.Label + ", sustained", color: "#e08a2c",
				s: figure(pr.Sustained, sustainedOK, func(s SustainedSample) float64 { return s.PublishedRate })},
		})
	}
	return barChart("Events per second: drain of the backlog (blue) and published under continuous writes (orange)", groups)
}

func barChart(title string, groups [][]bar) string {
	top := 40.0
	rows := 0
	for _, g := range groups {
		rows += len(g)
	}
	height := top + float64(rows*svgRowH+len(groups)*8) + 40
	maxV := 0.0
	for _, g := range groups {
		for _, b := range g {
			if b.s.N > 0 {
				maxV = math.Max(maxV, b.s.Max)
			}
		}
	}
	scaleMax := niceCeil(maxV)
	plotW := float64(svgWidth - svgLabelW - svgRight)
	x := func(v float64) float64 { return svgLabelW + v/scaleMax*plotW }
	var b strings.Builder
	svgHeader(&b, height, title)
	for i := 0; i <= 4; i++ {
		v := scaleMax * float64(i) / 4
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#ddd"/>`+"\n", x(v), top-6, x(v), height-34)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle" font-size="11">%s</text>`+"\n", x(v), height-20, thousands(v))
	}
	y := top
	for _, g := range groups {
		for _, bb := range g {
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" font-size="11">%s</text>`+"\n", svgLabelW-6, y+12, html.EscapeString(bb.label))
			switch {
			case bb.gap:
				fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-size="11" fill="#b00">no figure: see the table's gaps</text>`+"\n", svgLabelW+4, y+12)
			case bb.s.N == 0:
				fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-size="11" fill="#b00">no figure (failed)</text>`+"\n", svgLabelW+4, y+12)
			default:
				fmt.Fprintf(&b, `<rect x="%d" y="%.1f" width="%.1f" height="%d" fill="%s"/>`+"\n", svgLabelW, y+2, x(bb.s.Median)-svgLabelW, svgRowH-5, bb.color)
				if bb.s.N > 1 {
					fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#222"/>`+"\n", x(bb.s.Min), y+8, x(bb.s.Max), y+8)
				}
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11">%s</text>`+"\n", x(bb.s.Max)+4, y+12, thousands(bb.s.Median))
			}
			y += svgRowH
		}
		y += 8
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// latencySVG draws, per peer, its delivery delay's p50, p90, p99 and max
// (medians over the repetitions) on a logarithmic axis.
func latencySVG(r *Results) string {
	type row struct {
		label string
		marks [4]float64
		ok    bool
	}
	var rows []row
	lo, hi := math.Inf(1), 0.0
	for _, pr := range r.Peers {
		rw := row{label: pr.Label}
		if pr.Gap == "" {
			for i, f := range []func(DeliverySample) float64{
				func(s DeliverySample) float64 { return s.P50 }, func(s DeliverySample) float64 { return s.P90 },
				func(s DeliverySample) float64 { return s.P99 }, func(s DeliverySample) float64 { return s.Max }} {
				s := figure(pr.Delivery, deliveryOK, f)
				rw.marks[i] = s.Median
				if s.N > 0 {
					rw.ok = true
					lo, hi = math.Min(lo, math.Max(s.Median, 0.1)), math.Max(hi, s.Median)
				}
			}
		}
		rows = append(rows, rw)
	}
	if hi == 0 {
		lo, hi = 1, 10
	}
	dLo, dHi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if dHi <= dLo {
		dHi = dLo + 1
	}
	top := 56.0
	height := top + float64(len(rows)*22) + 44
	plotW := float64(svgWidth - svgLabelW - svgRight)
	x := func(v float64) float64 {
		return svgLabelW + (math.Log10(math.Max(v, 0.1))-dLo)/(dHi-dLo)*plotW
	}
	var b strings.Builder
	svgHeader(&b, height, "Delivery delay, commit → append, ms (log scale; medians over repetitions)")
	colors := [4]string{"#3b6ea8", "#5aa05a", "#e08a2c", "#b03030"}
	names := [4]string{"p50", "p90", "p99", "max"}
	for i := range names {
		fmt.Fprintf(&b, `<circle cx="%d" cy="36" r="5" fill="%s"/><text x="%d" y="40" font-size="11">%s</text>`+"\n", svgLabelW+i*70, colors[i], svgLabelW+i*70+9, names[i])
	}
	for d := dLo; d <= dHi; d++ {
		v := math.Pow(10, d)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#ddd"/>`+"\n", x(v), top-6, x(v), height-34)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle" font-size="11">%s</text>`+"\n", x(v), height-20, thousands(v))
	}
	for i, rw := range rows {
		y := top + float64(i*22)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" font-size="11">%s</text>`+"\n", svgLabelW-6, y+12, html.EscapeString(rw.label))
		if !rw.ok {
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-size="11" fill="#b00">no figure: see the table</text>`+"\n", svgLabelW+4, y+12)
			continue
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>`+"\n", x(rw.marks[0]), y+8, x(rw.marks[3]), y+8)
		for j, v := range rw.marks {
			if !math.IsNaN(v) {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="5" fill="%s"><title>%s %.1f ms</title></circle>`+"\n", x(v), y+8, colors[j], names[j], v)
			}
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10">p50 %.0f, p99 %.0f ms</text>`+"\n", x(rw.marks[3])+8, y+12, rw.marks[0], rw.marks[2])
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func svgHeader(b *strings.Builder, height float64, title string) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%.0f" viewBox="0 0 %d %.0f" font-family="sans-serif">`+"\n",
		svgWidth, height, svgWidth, height)
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(b, `<text x="10" y="20" font-size="13" font-weight="bold">%s</text>`+"\n", html.EscapeString(title))
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// thousands prints v rounded, with commas, or with a decimal below 10.
func thousands(v float64) string {
	if v < 10 && v != math.Trunc(v) {
		return fmt.Sprintf("%.1f", v)
	}
	s := fmt.Sprintf("%.0f", v)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
