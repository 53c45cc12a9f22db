//! The picture of `compare`: an SVG bar chart of Λ and lanes per routing, after Hoefler et al.'s Fig. 4.
//! Two panels side by side (Λ on a 0..1 axis, lanes used on an integer axis), one bar per routing
//! with its value on top, coloured by what the deadlock check found. Written by hand: plain SVG
//! 1.1 that browsers and converters (rsvg-convert, inkscape) render alike.

use std::fmt::Write as _;

/// One routing's bar pair.
#[derive(Clone, Debug)]
pub struct Bar {
    pub label: String,
    pub lambda: Option<f64>,
    pub lanes: u8,
    pub deadlock_free: bool,
    pub complete: bool,
}

const FREE: &str = "#3f6fa5";
const LOOPS: &str = "#d9822b";
const INCOMPLETE: &str = "#9a9a9a";
const SLOT: f64 = 64.0;
const BAR: f64 = 38.0;
const PLOT_H: f64 = 240.0;
const LEFT: f64 = 56.0;
const PANEL_GAP: f64 = 70.0;
const TOP: f64 = 88.0;

fn colour(b: &Bar) -> &'static str {
    if !b.complete {
        INCOMPLETE
    } else if b.deadlock_free {
        FREE
    } else {
        LOOPS
    }
}

/// Escapes text for SVG content and attributes.
fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\t' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// The axis maximum and tick step for lanes: at least 8 (a common VL count), integer ticks.
fn lane_axis(max: u8) -> (u32, u32) {
    let top = u32::from(max).max(8);
    let step = match top {
        0..=8 => 1,
        9..=16 => 2,
        _ => 4,
    };
    (top.div_ceil(step) * step, step)
}

struct Panel<'a> {
    x0: f64,
    width: f64,
    title: &'a str,
    /// (value at tick, label)
    ticks: Vec<(f64, String)>,
    top: f64,
}

impl Panel<'_> {
    fn y(&self, v: f64) -> f64 {
        TOP + PLOT_H * (1.0 - (v / self.top).clamp(0.0, 1.0))
    }

    fn frame(&self, out: &mut String) {
        let x0 = self.x0;
        let x1 = x0 + self.width;
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="13" font-weight="bold">{}</text>"#,
            x0 + self.width / 2.0,
            TOP - 22.0,
            esc(self.title)
        );
        for (v, label) in &self.ticks {
            let y = self.y(*v);
            let _ = writeln!(
                out,
                r##"<line x1="{x0:.1}" y1="{y:.1}" x2="{x1:.1}" y2="{y:.1}" stroke="#e2e2e2"/>"##
            );
            let _ = writeln!(
                out,
                r##"<line x1="{:.1}" y1="{y:.1}" x2="{x0:.1}" y2="{y:.1}" stroke="#333"/>"##,
                x0 - 5.0
            );
            let _ = writeln!(
                out,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="end" font-size="11">{}</text>"#,
                x0 - 8.0,
                y + 4.0,
                esc(label)
            );
        }
        let yb = TOP + PLOT_H;
        let _ = writeln!(
            out,
            r##"<line x1="{x0:.1}" y1="{TOP:.1}" x2="{x0:.1}" y2="{yb:.1}" stroke="#333"/>"##
        );
        let _ = writeln!(
            out,
            r##"<line x1="{x0:.1}" y1="{yb:.1}" x2="{x1:.1}" y2="{yb:.1}" stroke="#333"/>"##
        );
    }

    /// A bar of `value` (None: "n/a") in slot `i`, with its value written on top.
    fn bar(&self, out: &mut String, i: usize, value: Option<f64>, text: &str, fill: &str) {
        let cx = self.x0 + SLOT * (i as f64 + 0.5) + 10.0;
        let yb = TOP + PLOT_H;
        match value {
            Some(v) => {
                let y = self.y(v);
                let _ = writeln!(
                    out,
                    r#"<rect x="{:.1}" y="{y:.1}" width="{BAR:.1}" height="{:.1}" fill="{fill}"/>"#,
                    cx - BAR / 2.0,
                    (yb - y).max(0.0)
                );
                let _ = writeln!(
                    out,
                    r#"<text x="{cx:.1}" y="{:.1}" text-anchor="middle" font-size="11">{}</text>"#,
                    y - 4.0,
                    esc(text)
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    r##"<text x="{cx:.1}" y="{:.1}" text-anchor="middle" font-size="11" fill="#666">n/a</text>"##,
                    yb - 4.0
                );
            }
        }
    }

    /// The routing's label under slot `i`, slanted when long.
    fn label(&self, out: &mut String, i: usize, label: &str, slant: bool) {
        let cx = self.x0 + SLOT * (i as f64 + 0.5) + 10.0;
        let y = TOP + PLOT_H + 16.0;
        if slant {
            let _ = writeln!(
                out,
                r#"<text x="{cx:.1}" y="{y:.1}" text-anchor="end" font-size="11" transform="rotate(-35 {cx:.1} {y:.1})">{}</text>"#,
                esc(label)
            );
        } else {
            let _ = writeln!(
                out,
                r#"<text x="{cx:.1}" y="{y:.1}" text-anchor="middle" font-size="11">{}</text>"#,
                esc(label)
            );
        }
    }
}

/// The chart as an SVG document.
pub fn svg(title: &str, subtitle: &str, bars: &[Bar]) -> String {
    let n = bars.len().max(1);
    let panel_w = (SLOT * n as f64 + 20.0).max(180.0);
    let slant = bars.iter().any(|b| b.label.chars().count() > 9);
    let longest = bars
        .iter()
        .map(|b| b.label.chars().count())
        .max()
        .unwrap_or(0) as f64;
    let label_h = if slant { 16.0 + longest * 5.2 } else { 26.0 };
    let width = (LEFT + panel_w + PANEL_GAP + panel_w + 24.0)
        .max(title.chars().count() as f64 * 7.5 + 40.0)
        .max(subtitle.chars().count() as f64 * 6.2 + 40.0);
    let legend_y = TOP + PLOT_H + label_h + 18.0;
    let height = legend_y + 24.0;

    let lam = Panel {
        x0: LEFT,
        width: panel_w,
        title: "Effective bisection bandwidth Λ",
        ticks: (0..=5)
            .map(|i| (i as f64 * 0.2, format!("{:.1}", i as f64 * 0.2)))
            .collect(),
        top: 1.0,
    };
    let max_lanes = bars.iter().map(|b| b.lanes).max().unwrap_or(0);
    let (ltop, lstep) = lane_axis(max_lanes);
    let lanes = Panel {
        x0: LEFT + panel_w + PANEL_GAP,
        width: panel_w,
        title: "Virtual lanes used",
        ticks: (0..=ltop / lstep)
            .map(|i| (f64::from(i * lstep), (i * lstep).to_string()))
            .collect(),
        top: f64::from(ltop),
    };

    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">"#
    );
    let _ = writeln!(
        out,
        r#"<rect x="0" y="0" width="{width:.0}" height="{height:.0}" fill="white"/>"#
    );
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="24" text-anchor="middle" font-size="15" font-weight="bold">{}</text>"#,
        width / 2.0,
        esc(title)
    );
    let _ = writeln!(
        out,
        r##"<text x="{:.1}" y="42" text-anchor="middle" font-size="11" fill="#444">{}</text>"##,
        width / 2.0,
        esc(subtitle)
    );
    lam.frame(&mut out);
    lanes.frame(&mut out);
    for (i, b) in bars.iter().enumerate() {
        let fill = colour(b);
        lam.bar(
            &mut out,
            i,
            b.lambda,
            &b.lambda.map_or(String::new(), |l| format!("{l:.3}")),
            fill,
        );
        lanes.bar(
            &mut out,
            i,
            Some(f64::from(b.lanes)),
            &b.lanes.to_string(),
            fill,
        );
        lam.label(&mut out, i, &b.label, slant);
        lanes.label(&mut out, i, &b.label, slant);
    }
    // Legend: only the kinds present.
    let mut x = LEFT;
    for (fill, text, present) in [
        (
            FREE,
            "deadlock-free",
            bars.iter().any(|b| colour(b) == FREE),
        ),
        (
            LOOPS,
            "credit loops (not deadlock-free)",
            bars.iter().any(|b| colour(b) == LOOPS),
        ),
        (
            INCOMPLETE,
            "incomplete routes",
            bars.iter().any(|b| colour(b) == INCOMPLETE),
        ),
    ] {
        if !present {
            continue;
        }
        let _ = writeln!(
            out,
            r#"<rect x="{x:.1}" y="{:.1}" width="12" height="12" fill="{fill}"/>"#,
            legend_y - 10.0
        );
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{legend_y:.1}" font-size="11">{}</text>"#,
            x + 17.0,
            esc(text)
        );
        x += 30.0 + text.len() as f64 * 6.4;
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bars() -> Vec<Bar> {
        vec![
            Bar {
                label: "sssp-rs".into(),
                lambda: Some(0.61234),
                lanes: 1,
                deadlock_free: false,
                complete: true,
            },
            Bar {
                label: "dfsssp-rs".into(),
                lambda: Some(0.6),
                lanes: 3,
                deadlock_free: true,
                complete: true,
            },
            Bar {
                label: "a<b&c".into(),
                lambda: None,
                lanes: 15,
                deadlock_free: true,
                complete: false,
            },
        ]
    }

    #[test]
    fn chart_has_bars_values_axes_and_escaped_labels() {
        let s = svg("torus \"4x4\"", "Λ over 10 patterns", &bars());
        assert!(s.starts_with("<?xml") && s.trim_end().ends_with("</svg>"));
        // one bar per routing in the lanes panel, two with Λ
        assert_eq!(s.matches("<rect").count(), 1 + 2 + 3 + 3);
        assert!(s.contains(">0.612<") && s.contains(">0.600<") && s.contains(">n/a<"));
        assert!(
            s.contains(">15<") && s.contains(">16<"),
            "lane axis to 16 in steps of 2"
        );
        assert!(s.contains("a&lt;b&amp;c") && !s.contains("a<b"));
        assert!(s.contains("torus &quot;4x4&quot;"));
        for c in [FREE, LOOPS, INCOMPLETE] {
            assert!(s.contains(c));
        }
        // every tag closed: as many opening '<' as '>' (no raw '<' in text)
        assert_eq!(s.matches('<').count(), s.matches('>').count());
    }

    #[test]
    fn lane_axis_is_integer_and_covers_the_maximum() {
        assert_eq!(lane_axis(0), (8, 1));
        assert_eq!(lane_axis(3), (8, 1));
        assert_eq!(lane_axis(9), (10, 2));
        assert_eq!(lane_axis(15), (16, 2));
        assert_eq!(lane_axis(17), (20, 4));
    }
}
