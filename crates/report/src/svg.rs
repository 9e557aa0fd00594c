//! A line chart drawn as a standalone SVG document: axes with ticks and
//! labels, one polyline per series (split at gaps), a legend, shaded phase
//! bands and one vertical marker per event. All text from input files is
//! escaped with [`escape`]; coordinates are always finite.

use std::fmt::Write as _;

use crate::scale::{self, Axis, Point};

pub const WIDTH: f64 = 960.0;
const MARGIN_LEFT: f64 = 80.0;
const MARGIN_RIGHT: f64 = 30.0;
const MARGIN_TOP: f64 = 64.0;
const PLOT_HEIGHT: f64 = 280.0;
const AXIS_SPACE: f64 = 52.0;
const LEGEND_ROW_HEIGHT: f64 = 20.0;
const LEGEND_PER_ROW: usize = 4;
/// Event labels longer than this are cut in the chart (full text in the tooltip).
pub const EVENT_LABEL_MAX_CHARS: usize = 48;
/// Legend names longer than this are cut.
pub const LEGEND_LABEL_MAX_CHARS: usize = 32;

/// A white outline behind marker labels so they stay readable over lines.
const HALO: &str = r#"paint-order="stroke" stroke="white" stroke-width="3" stroke-opacity="0.8""#;

/// Line colours, assigned to operations in display order.
pub const PALETTE: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// How a line is drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    /// Index into [`PALETTE`] (wraps around).
    pub color: usize,
    pub dashed: bool,
    /// 1.0 for the main lines; lower for secondary ones (p50/p95).
    pub opacity: f64,
    pub points: Vec<Point>,
}

/// A vertical marker at time `t`.
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    pub t: f64,
    pub label: String,
}

/// A phase shown as a band on the time axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Band {
    pub start: f64,
    pub end: f64,
    pub label: String,
    /// Whether its values set the value axis (a load phase's do not: what
    /// rises above the axis is cut at the plot's top, and the title says
    /// so).
    pub scaled: bool,
}

/// Width of a phase label's character in pixels (12 px italic sans-serif,
/// a little generous so that estimates never overlap).
const LABEL_CHAR_PX: f64 = 6.8;
/// Vertical positions of phase label rows above the plot, from the plot top.
const LABEL_ROWS: [f64; 2] = [6.0, 20.0];

/// A line chart over time.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// File stem and HTML id, e.g. `throughput`.
    pub id: String,
    pub title: String,
    pub y_label: String,
    pub series: Vec<Series>,
    pub markers: Vec<Marker>,
    pub bands: Vec<Band>,
}

impl Series {
    pub fn new(name: impl Into<String>, color: usize, points: Vec<Point>) -> Series {
        Series {
            name: name.into(),
            color,
            dashed: false,
            opacity: 1.0,
            points,
        }
    }
}

impl Chart {
    /// True if at least one series has a value to draw.
    pub fn has_data(&self) -> bool {
        self.series
            .iter()
            .any(|s| s.points.iter().any(|p| p.1.is_some()))
    }

    /// The chart as a complete SVG document.
    pub fn to_svg(&self) -> String {
        let x_axis = self.x_axis();
        let y_axis = self.y_axis();
        let clipped = self.values().any(|v| v > y_axis.max);
        let plot = Plot::new(x_axis, y_axis);
        let legend_rows = self.series.len().div_ceil(LEGEND_PER_ROW);
        let height =
            MARGIN_TOP + PLOT_HEIGHT + AXIS_SPACE + legend_rows as f64 * LEGEND_ROW_HEIGHT + 8.0;
        let mut out = String::new();
        let _ = write!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="chart-{id}" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#,
            id = escape(&self.id),
        );
        let _ = write!(
            out,
            r#"<title>{t}</title><rect width="100%" height="100%" fill="white"/><text x="{x}" y="20" font-size="15" font-weight="bold">{t}</text>"#,
            t = escape(&self.title),
            x = MARGIN_LEFT,
        );
        if clipped {
            let _ = write!(
                out,
                r##"<text class="off-scale" x="{x}" y="20" text-anchor="end" font-size="11" fill="#556">the load phase rises above this scale</text>"##,
                x = WIDTH - MARGIN_RIGHT,
            );
        }
        self.draw_bands(&mut out, &plot);
        self.draw_axes(&mut out, &plot);
        let _ = write!(
            out,
            r#"<clipPath id="plot-{id}"><rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}"/></clipPath><g clip-path="url(#plot-{id})">"#,
            id = escape(&self.id),
            x = plot.left,
            y = plot.top - 2.0,
            w = plot.right - plot.left,
            h = PLOT_HEIGHT + 4.0,
        );
        for series in &self.series {
            draw_series(&mut out, &plot, series);
        }
        out.push_str("</g>");
        self.draw_markers(&mut out, &plot);
        self.draw_legend(&mut out, MARGIN_TOP + PLOT_HEIGHT + AXIS_SPACE);
        out.push_str("</svg>\n");
        out
    }

    fn x_axis(&self) -> Axis {
        let mut lo = 0.0f64;
        let mut hi = f64::NEG_INFINITY;
        let xs = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0));
        for x in xs.chain(self.bands.iter().flat_map(|b| [b.start, b.end])) {
            lo = lo.min(x);
            hi = hi.max(x);
        }
        if !hi.is_finite() {
            hi = lo + 1.0;
        }
        // The axis ends with the data, not at the next round tick.
        let mut axis = scale::axis(lo, hi, scale::time_step);
        if hi > lo {
            axis.max = hi;
            axis.ticks.retain(|&t| t <= hi + axis.step * 1e-9);
        }
        axis
    }

    /// Every value of every series.
    fn values(&self) -> impl Iterator<Item = f64> + '_ {
        self.series
            .iter()
            .flat_map(|s| s.points.iter().filter_map(|p| p.1))
            .map(scale::clamp)
    }

    /// Whether a value at `t` sets the value axis: outside every band, or
    /// inside a scaled one.
    fn scales(&self, t: f64) -> bool {
        let mut inside = self.bands.iter().filter(|b| b.start <= t && t <= b.end);
        let first = inside.next();
        first.is_none() || first.is_some_and(|b| b.scaled) || inside.any(|b| b.scaled)
    }

    fn y_axis(&self) -> Axis {
        let mut lo = 0.0f64;
        let mut hi = f64::NEG_INFINITY;
        let scaled = self
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|p| self.scales(p.0))
            .filter_map(|p| p.1.map(scale::clamp));
        for y in scaled {
            lo = lo.min(y);
            hi = hi.max(y);
        }
        if !hi.is_finite() {
            // Only unscaled phases have values: they set the axis then.
            for y in self.values() {
                lo = lo.min(y);
                hi = hi.max(y);
            }
        }
        if !hi.is_finite() {
            hi = 1.0;
        }
        scale::axis(lo, hi, scale::nice_step)
    }

    fn draw_bands(&self, out: &mut String, plot: &Plot) {
        for (i, band) in self.bands.iter().enumerate() {
            let (x0, x1) = (plot.x(band.start), plot.x(band.end));
            if i % 2 == 1 {
                let _ = write!(
                    out,
                    r##"<rect class="phase" x="{x0:.1}" y="{top:.1}" width="{w:.1}" height="{h:.1}" fill="#eef2f7"/>"##,
                    top = plot.top,
                    w = (x1 - x0).max(0.0),
                    h = PLOT_HEIGHT,
                );
            }
            if i > 0 {
                let _ = write!(
                    out,
                    r##"<line class="phase-boundary" x1="{x0:.1}" x2="{x0:.1}" y1="{top:.1}" y2="{bottom:.1}" stroke="#8896a8"/>"##,
                    top = plot.top,
                    bottom = plot.bottom,
                );
            }
        }
        for (x, row, label) in phase_labels(&self.bands, plot) {
            let _ = write!(
                out,
                r##"<text class="phase-label" x="{x:.1}" y="{y:.1}" fill="#556" font-style="italic" {HALO}>{label}</text>"##,
                y = plot.top - LABEL_ROWS[row],
                label = escape(&label),
            );
        }
    }

    fn draw_axes(&self, out: &mut String, plot: &Plot) {
        let (left, right, top, bottom) = (plot.left, plot.right, plot.top, plot.bottom);
        for &v in &plot.y_axis.ticks {
            let y = plot.y(v);
            let _ = write!(
                out,
                r##"<line x1="{left:.1}" x2="{right:.1}" y1="{y:.1}" y2="{y:.1}" stroke="#e4e4e4"/><text x="{tx:.1}" y="{ty:.1}" text-anchor="end">{label}</text>"##,
                tx = left - 6.0,
                ty = y + 4.0,
                label = escape(&scale::fmt_value(v, plot.y_axis.step)),
            );
        }
        for &v in &plot.x_axis.ticks {
            let x = plot.x(v);
            let _ = write!(
                out,
                r##"<line x1="{x:.1}" x2="{x:.1}" y1="{bottom:.1}" y2="{b2:.1}" stroke="#333"/><text x="{x:.1}" y="{ty:.1}" text-anchor="middle">{label}</text>"##,
                b2 = bottom + 5.0,
                ty = bottom + 18.0,
                label = escape(&scale::fmt_time(v)),
            );
        }
        let _ = write!(
            out,
            r##"<path class="axes" d="M{left:.1},{top:.1} V{bottom:.1} H{right:.1}" fill="none" stroke="#333"/>"##
        );
        let _ = write!(
            out,
            r##"<text x="{cx:.1}" y="{xy:.1}" text-anchor="middle">time since start</text><text transform="translate(16,{cy:.1}) rotate(-90)" text-anchor="middle">{yl}</text>"##,
            cx = (left + right) / 2.0,
            xy = bottom + 36.0,
            cy = (top + bottom) / 2.0,
            yl = escape(&self.y_label),
        );
    }

    fn draw_markers(&self, out: &mut String, plot: &Plot) {
        let shown = self
            .markers
            .iter()
            .filter(|m| m.t >= plot.x_axis.min && m.t <= plot.x_axis.max);
        for (i, marker) in shown.enumerate() {
            let x = plot.x(marker.t);
            let label_y = plot.top + 12.0 + (i % 3) as f64 * 14.0;
            let _ = write!(
                out,
                r##"<g class="event"><title>{full}</title><line x1="{x:.1}" x2="{x:.1}" y1="{top:.1}" y2="{bottom:.1}" stroke="#b00" stroke-dasharray="4 3"/><text x="{tx:.1}" y="{label_y:.1}" fill="#b00" font-size="11" {HALO}>{label}</text></g>"##,
                full = escape(&marker.label),
                top = plot.top,
                bottom = plot.bottom,
                tx = x + 3.0,
                label = escape(&shorten(&marker.label, EVENT_LABEL_MAX_CHARS)),
            );
        }
    }

    fn draw_legend(&self, out: &mut String, top: f64) {
        let column_width = (WIDTH - MARGIN_LEFT - MARGIN_RIGHT) / LEGEND_PER_ROW as f64;
        for (i, series) in self.series.iter().enumerate() {
            let x = MARGIN_LEFT + (i % LEGEND_PER_ROW) as f64 * column_width;
            let y = top + (i / LEGEND_PER_ROW) as f64 * LEGEND_ROW_HEIGHT + 10.0;
            let _ = write!(
                out,
                r#"<g class="legend"><line x1="{x:.1}" x2="{x2:.1}" y1="{y:.1}" y2="{y:.1}" {style}/><text x="{tx:.1}" y="{ty:.1}">{name}</text></g>"#,
                x2 = x + 24.0,
                style = stroke_style(series),
                tx = x + 30.0,
                ty = y + 4.0,
                name = escape(&shorten(&series.name, LEGEND_LABEL_MAX_CHARS)),
            );
        }
    }
}

/// Where each phase's label goes: `(x, row, text)`, at the phase's start.
/// A label takes the first row where it clears the labels already placed;
/// where no row is clear, it is left out (the report's phase table still
/// names it), so no two labels overlap.
fn phase_labels(bands: &[Band], plot: &Plot) -> Vec<(f64, usize, String)> {
    let mut ends = [f64::NEG_INFINITY; LABEL_ROWS.len()];
    let mut out = Vec::new();
    for band in bands {
        let x = plot.x(band.start) + 4.0;
        let text = shorten(&band.label, EVENT_LABEL_MAX_CHARS);
        let width = text.chars().count() as f64 * LABEL_CHAR_PX;
        if let Some(row) = ends.iter().position(|&end| x >= end) {
            ends[row] = x + width + LABEL_CHAR_PX;
            out.push((x, row, text));
        }
    }
    out
}

/// Where the plot area sits in the SVG and how data maps onto it.
struct Plot {
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
    x_axis: Axis,
    y_axis: Axis,
}

impl Plot {
    fn new(x_axis: Axis, y_axis: Axis) -> Plot {
        Plot {
            left: MARGIN_LEFT,
            right: WIDTH - MARGIN_RIGHT,
            top: MARGIN_TOP,
            bottom: MARGIN_TOP + PLOT_HEIGHT,
            x_axis,
            y_axis,
        }
    }

    fn x(&self, t: f64) -> f64 {
        self.left + self.x_axis.frac(t) * (self.right - self.left)
    }

    fn y(&self, v: f64) -> f64 {
        self.bottom - self.y_axis.frac(v) * (self.bottom - self.top)
    }
}

fn stroke_style(series: &Series) -> String {
    let color = PALETTE[series.color % PALETTE.len()];
    let dash = if series.dashed {
        r#" stroke-dasharray="7 4""#
    } else {
        ""
    };
    let width = if series.opacity < 1.0 { 1.2 } else { 1.8 };
    format!(
        r#"stroke="{color}" stroke-width="{width}" stroke-opacity="{:.2}"{dash}"#,
        series.opacity.clamp(0.0, 1.0)
    )
}

/// Draws a series as polylines, one per run of points without a gap; a lone
/// point between gaps becomes a dot.
fn draw_series(out: &mut String, plot: &Plot, series: &Series) {
    let points = scale::downsample(&series.points, scale::MAX_POINTS_PER_LINE);
    let style = stroke_style(series);
    let name = escape(&series.name);
    for segment in points.split(|p| p.1.is_none()) {
        let coords: Vec<(f64, f64)> = segment
            .iter()
            .filter_map(|&(t, v)| v.map(|v| (plot.x(t), plot.y(v))))
            .collect();
        match coords.as_slice() {
            [] => {}
            [(x, y)] => {
                let color = PALETTE[series.color % PALETTE.len()];
                let _ = write!(
                    out,
                    r#"<circle class="series" data-series="{name}" cx="{x:.1}" cy="{y:.1}" r="2" fill="{color}"/>"#
                );
            }
            _ => {
                let _ = write!(
                    out,
                    r#"<polyline class="series" data-series="{name}" points=""#
                );
                for (i, (x, y)) in coords.iter().enumerate() {
                    let sep = if i == 0 { "" } else { " " };
                    let _ = write!(out, "{sep}{x:.1},{y:.1}");
                }
                let _ = write!(out, r#"" fill="none" {style}/>"#);
            }
        }
    }
}

/// Escapes text for SVG and HTML, in both element content and attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters are not allowed in XML 1.0.
            c if c.is_control() && c != '\n' && c != '\t' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// Cuts `text` to `max` characters, marking the cut with an ellipsis.
pub fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(points: Vec<Point>) -> Chart {
        Chart {
            id: "t".into(),
            title: "T".into(),
            y_label: "op/s".into(),
            series: vec![Series::new("w", 0, points)],
            markers: vec![Marker {
                t: 1.0,
                label: "<b>".into(),
            }],
            bands: vec![],
        }
    }

    fn band(start: f64, end: f64, label: &str, scaled: bool) -> Band {
        Band {
            start,
            end,
            label: label.into(),
            scaled,
        }
    }

    #[test]
    fn a_load_phase_does_not_set_the_value_axis_and_is_cut_at_the_top() {
        let mut c = chart(vec![(5.0, Some(40_000.0)), (15.0, Some(1_000.0))]);
        c.bands = vec![
            band(0.0, 10.0, "load", false),
            band(10.0, 20.0, "steady", true),
        ];
        let y = c.y_axis();
        assert!(y.max >= 1_000.0 && y.max < 2_000.0, "{y:?}");
        let svg = c.to_svg();
        assert!(svg.contains("rises above this scale") && svg.contains("clip-path="));
        c.bands[0].scaled = true;
        assert!(c.y_axis().max >= 40_000.0);
        assert!(!c.to_svg().contains("rises above this scale"));
        // Only the load has values: it sets the axis.
        let mut only = chart(vec![(5.0, Some(40_000.0))]);
        only.bands = vec![band(0.0, 10.0, "load", false)];
        assert!(only.y_axis().max >= 40_000.0);
    }

    #[test]
    fn the_time_axis_ends_with_the_data() {
        let c = chart(vec![(0.0, Some(1.0)), (37.0, Some(2.0))]);
        let x = c.x_axis();
        assert_eq!(x.max, 37.0);
        assert!(x.ticks.iter().all(|&t| t <= 37.0), "{:?}", x.ticks);
    }

    #[test]
    fn phase_labels_never_overlap() {
        let mut c = chart(vec![(0.0, Some(1.0)), (60.0, Some(2.0))]);
        c.bands = (0..12)
            .map(|i| {
                band(
                    i as f64 * 5.0,
                    i as f64 * 5.0 + 5.0,
                    "lwt-contended-c256",
                    true,
                )
            })
            .collect();
        let plot = Plot::new(c.x_axis(), c.y_axis());
        let labels = phase_labels(&c.bands, &plot);
        assert!(labels.len() >= 2, "{labels:?}");
        for row in 0..LABEL_ROWS.len() {
            let on_row: Vec<_> = labels.iter().filter(|l| l.1 == row).collect();
            for w in on_row.windows(2) {
                let end = w[0].0 + w[0].2.chars().count() as f64 * LABEL_CHAR_PX;
                assert!(w[1].0 >= end, "{:?} overlaps {:?}", w[1], w[0]);
            }
        }
        // Wide bands keep every label, on the first row.
        c.bands = vec![
            band(0.0, 30.0, "load", true),
            band(30.0, 60.0, "steady", true),
        ];
        let labels = phase_labels(&c.bands, &plot);
        assert_eq!(labels.iter().map(|l| l.1).collect::<Vec<_>>(), [0, 0]);
    }

    #[test]
    fn gaps_split_lines_and_lone_points_are_dots() {
        let svg = chart(vec![
            (0.0, Some(1.0)),
            (1.0, Some(2.0)),
            (2.0, None),
            (3.0, Some(1.0)),
        ])
        .to_svg();
        assert_eq!(svg.matches("<polyline").count(), 1);
        assert_eq!(svg.matches("<circle").count(), 1);
        assert!(svg.contains("&lt;b&gt;") && !svg.contains("<b>"));
    }

    #[test]
    fn empty_chart_has_no_data_but_still_renders() {
        let c = chart(vec![(0.0, None)]);
        assert!(!c.has_data());
        assert!(c.to_svg().ends_with("</svg>\n"));
    }

    #[test]
    fn extreme_values_give_finite_coordinates() {
        let svg = chart(vec![(0.0, Some(f64::MAX)), (1e300, Some(-f64::MAX))]).to_svg();
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
    }

    #[test]
    fn escape_and_shorten() {
        assert_eq!(escape("a<'\"&>\u{1}"), "a&lt;&#39;&quot;&amp;&gt;\u{fffd}");
        assert_eq!(shorten("abcdef", 4), "abc…");
        assert_eq!(shorten("abc", 4), "abc");
    }
}
