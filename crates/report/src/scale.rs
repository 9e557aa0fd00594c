//! Axis arithmetic for the charts: "nice" tick steps, tick label formats, and
//! downsampling of long series. Pure functions over finite numbers; callers
//! clamp values to [`VALUE_ABS_MAX`] first so no difference overflows.

/// A chart line never has more points than this; longer series are reduced
/// by [`downsample`], keeping each bucket's minimum and maximum so spikes stay.
pub const MAX_POINTS_PER_LINE: usize = 2000;

/// Values are clamped to ±this before plotting (keeps `max - min` finite).
pub const VALUE_ABS_MAX: f64 = 1e100;

/// Aim for about this many ticks per axis.
pub const TARGET_TICKS: f64 = 6.0;

/// Never draw more ticks than this on one axis.
pub const MAX_TICKS: usize = 24;

/// A point of a series; `None` is a gap (no data in that interval).
pub type Point = (f64, Option<f64>);

/// Clamps a value into the plottable range.
pub fn clamp(v: f64) -> f64 {
    if v.is_nan() {
        0.0
    } else {
        v.clamp(-VALUE_ABS_MAX, VALUE_ABS_MAX)
    }
}

/// An axis range rounded outwards to whole ticks.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub min: f64,
    pub max: f64,
    pub ticks: Vec<f64>,
    pub step: f64,
}

impl Axis {
    /// The position of `v` on the axis, 0.0 at `min` and 1.0 at `max`.
    pub fn frac(&self, v: f64) -> f64 {
        let span = self.max - self.min;
        if span > 0.0 && span.is_finite() {
            (clamp(v) - self.min) / span
        } else {
            0.0
        }
    }
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let power = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * power >= raw * (1.0 - 1e-9) {
            return m * power;
        }
    }
    10.0 * power
}

/// Steps that read well on a time axis in seconds.
const TIME_STEPS_S: [f64; 19] = [
    0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0,
    3600.0, 7200.0, 10800.0, 21600.0,
];

/// A step for a time axis in seconds: a round duration when one fits.
pub fn time_step(raw: f64) -> f64 {
    TIME_STEPS_S
        .iter()
        .copied()
        .find(|s| *s >= raw)
        .unwrap_or_else(|| nice_step(raw / 3600.0) * 3600.0)
}

/// Builds an axis covering `[lo, hi]` with ticks at multiples of the step
/// chosen by `step_for` (given the raw span per tick).
pub fn axis(lo: f64, hi: f64, step_for: fn(f64) -> f64) -> Axis {
    let (mut lo, mut hi) = (clamp(lo), clamp(hi));
    if lo > hi {
        std::mem::swap(&mut lo, &mut hi);
    }
    if hi - lo <= 0.0 {
        hi = lo + 1.0;
    }
    let mut step = step_for((hi - lo) / TARGET_TICKS);
    // Guard against a step too fine for the range (only possible with odd
    // step functions): widen until the tick count is bounded.
    while (hi - lo) / step > MAX_TICKS as f64 && step.is_finite() {
        step *= 2.0;
    }
    let min = (lo / step).floor() * step;
    let max = (hi / step).ceil() * step;
    let mut ticks = Vec::new();
    let mut i = 0.0;
    while ticks.len() <= MAX_TICKS {
        let v = min + i * step;
        if v > max + step * 1e-9 {
            break;
        }
        ticks.push(v);
        i += 1.0;
    }
    Axis {
        min,
        max,
        ticks,
        step,
    }
}

/// A tick label for a value axis: SI suffix, at most three decimals.
pub fn fmt_value(v: f64, step: f64) -> String {
    let a = v.abs().max(step.abs());
    let (div, suffix) = if a >= 1e12 {
        (1e12, "T")
    } else if a >= 1e9 {
        (1e9, "G")
    } else if a >= 1e6 {
        (1e6, "M")
    } else if a >= 1e4 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    let scaled_step = step / div;
    let decimals = if scaled_step >= 1.0 || scaled_step <= 0.0 {
        0
    } else {
        ((-scaled_step.log10()).ceil() as usize).min(3)
    };
    let text = format!("{:.*}", decimals, v / div);
    let text = if text == "-0" { "0".to_string() } else { text };
    format!("{text}{suffix}")
}

/// A tick label for a time axis in seconds: `45s`, `2m30s`, `1h`, `1h30m`.
pub fn fmt_time(secs: f64) -> String {
    if secs.abs() < 60.0 {
        let whole = secs.fract().abs() < 1e-9;
        return if whole {
            format!("{secs:.0}s")
        } else {
            format!("{secs:.1}s")
        };
    }
    let sign = if secs < 0.0 { "-" } else { "" };
    let total = secs.abs().round() as u64;
    let (h, m, s) = (total / 3600, (total % 3600) / 60, total % 60);
    match (h, m, s) {
        (0, m, 0) => format!("{sign}{m}m"),
        (0, m, s) => format!("{sign}{m}m{s:02}s"),
        (h, 0, 0) => format!("{sign}{h}h"),
        (h, m, _) => format!("{sign}{h}h{m:02}m"),
    }
}

/// Reduces `points` to at most `max` points (`max >= 2`): the points are cut
/// into `max / 2` buckets of consecutive points and each keeps its lowest and
/// highest value in their original order; a bucket without values keeps a gap.
pub fn downsample(points: &[Point], max: usize) -> Vec<Point> {
    let max = max.max(2);
    if points.len() <= max {
        return points.to_vec();
    }
    let buckets = max / 2;
    let size = points.len().div_ceil(buckets);
    let mut out = Vec::with_capacity(max);
    for chunk in points.chunks(size) {
        let mut lo: Option<(usize, f64)> = None;
        let mut hi: Option<(usize, f64)> = None;
        for (i, (_, y)) in chunk.iter().enumerate() {
            if let Some(y) = *y {
                if !matches!(lo, Some((_, v)) if v <= y) {
                    lo = Some((i, y));
                }
                if !matches!(hi, Some((_, v)) if v >= y) {
                    hi = Some((i, y));
                }
            }
        }
        match (lo, hi) {
            (Some((a, _)), Some((b, _))) => {
                let (first, second) = if a <= b { (a, b) } else { (b, a) };
                out.push(chunk[first]);
                if second != first {
                    out.push(chunk[second]);
                }
            }
            _ => out.push((chunk[0].0, None)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(1.3), 2.0);
        assert_eq!(nice_step(3.0), 5.0);
        assert_eq!(nice_step(420.0), 500.0);
        assert_eq!(nice_step(f64::NAN), 1.0);
        assert_eq!(time_step(7.0), 10.0);
        assert_eq!(time_step(40000.0), 72000.0);
    }

    #[test]
    fn axis_covers_range_with_bounded_ticks() {
        let a = axis(0.0, 1930.0, nice_step);
        assert_eq!((a.min, a.max, a.step), (0.0, 2000.0, 500.0));
        assert_eq!(a.ticks, vec![0.0, 500.0, 1000.0, 1500.0, 2000.0]);
        assert!((a.frac(1000.0) - 0.5).abs() < 1e-12);
        for (lo, hi) in [
            (5.0, 5.0),
            (-VALUE_ABS_MAX, VALUE_ABS_MAX),
            (1e-300, 2e-300),
        ] {
            let a = axis(lo, hi, nice_step);
            assert!(a.ticks.len() <= MAX_TICKS + 1 && !a.ticks.is_empty());
            assert!(a.min <= lo && a.max >= hi.max(lo));
        }
    }

    #[test]
    fn labels() {
        assert_eq!(fmt_value(1500.0, 500.0), "1500");
        assert_eq!(fmt_value(20000.0, 5000.0), "20k");
        assert_eq!(fmt_value(2.5e6, 5e5), "2.5M");
        assert_eq!(fmt_value(0.25, 0.05), "0.25");
        assert_eq!(fmt_time(30.0), "30s");
        assert_eq!(fmt_time(90.0), "1m30s");
        assert_eq!(fmt_time(7200.0), "2h");
        assert_eq!(fmt_time(5400.0), "1h30m");
    }

    #[test]
    fn downsample_keeps_extremes_and_bound() {
        let mut pts: Vec<Point> = (0..10_000).map(|i| (i as f64, Some(1.0))).collect();
        pts[5_000].1 = Some(99.0);
        pts[7_000].1 = None;
        let out = downsample(&pts, MAX_POINTS_PER_LINE);
        assert!(out.len() <= MAX_POINTS_PER_LINE);
        assert!(out.iter().any(|p| p.1 == Some(99.0)));
        let short: Vec<Point> = pts[..10].to_vec();
        assert_eq!(downsample(&short, MAX_POINTS_PER_LINE), short);
    }
}
