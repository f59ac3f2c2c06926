//! The one way an estimate and its interval are printed for people: `40.0 [22.6, 59.4]`, the
//! value rounded to nearest and the bounds rounded outward, so the printed interval always
//! contains the computed one. Every human output (terminal, Markdown, HTML, history, compare,
//! audit) prints through [`Interval`]; machine formats keep the raw values.

use crate::stats::Estimate;
use std::fmt;

/// A value with optional bounds, and how to print them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    value: Option<f64>,
    bounds: Option<(f64, f64)>,
    /// What the numbers are multiplied by when printed: 100 for a fraction shown as a percentage.
    scale: f64,
    /// The ends of the scale (printed units): outward rounding never passes them.
    limits: Option<(f64, f64)>,
    decimals: usize,
}

/// Tolerance, in units of the last printed digit, that keeps bounds which are exact at the
/// printed precision (87.5, or 0.29 stored as 28.999…) from moving a step.
const EXACT: f64 = 1e-6;

impl Interval {
    /// Numbers printed as given, with one decimal and no limits.
    pub fn plain(value: Option<f64>, bounds: Option<(f64, f64)>) -> Interval {
        let finite = |x: f64| x.is_finite();
        Interval {
            value: value.filter(|v| finite(*v)),
            bounds: bounds.filter(|(lo, hi)| finite(*lo) && finite(*hi) && lo <= hi),
            scale: 1.0,
            limits: None,
            decimals: 1,
        }
    }

    /// A fraction in [0, 1] with its bounds, printed as a percentage between 0 and 100.
    pub fn percent(value: Option<f64>, bounds: Option<(f64, f64)>) -> Interval {
        Interval {
            scale: 100.0,
            limits: Some((0.0, 100.0)),
            ..Interval::plain(value, bounds)
        }
    }

    /// An estimate's value and 95% interval as a percentage; `-` when there is none.
    pub fn of(e: Option<&Estimate>) -> Interval {
        Interval::percent(e.and_then(|e| e.value), e.and_then(|e| e.ci))
    }

    /// The same numbers printed with `decimals` digits after the point.
    pub fn decimals(self, decimals: usize) -> Interval {
        Interval { decimals, ..self }
    }

    /// Printed bounds never pass `lo` and `hi` (in printed units: 0 and 100 for a percentage).
    pub fn within(self, lo: f64, hi: f64) -> Interval {
        Interval {
            limits: Some((lo, hi)),
            ..self
        }
    }

    /// The value as printed: `40.0` (ties to even, as Rust formats), or `-` when there is none.
    pub fn value_text(&self) -> String {
        let Some(v) = self.value else {
            return "-".into();
        };
        let text = format!("{:.*}", self.decimals, v * self.scale);
        // A value that rounds to zero prints without a sign, as the bounds do.
        match text.strip_prefix('-') {
            Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
            _ => text,
        }
    }

    fn step(&self) -> f64 {
        10f64.powi(-(self.decimals as i32))
    }

    /// The bounds as printed, rounded outward (and held within the limits).
    pub fn printed_bounds(&self) -> Option<(f64, f64)> {
        let (lo, hi) = self.bounds?;
        let step = self.step();
        let mut down = (lo * self.scale / step + EXACT).floor() * step;
        let mut up = (hi * self.scale / step - EXACT).ceil() * step;
        if let Some((min, max)) = self.limits {
            (down, up) = (down.clamp(min, max), up.clamp(min, max));
        }
        // `+ 0.0` turns a -0.0 into 0.0, which prints without a sign.
        Some((down + 0.0, up + 0.0))
    }
}

/// `40.0 [22.6, 59.4]`; `40.0` without bounds; `-` without a value.
impl Interval {
    /// `[lo, hi]` as printed after the value; `None` without a value or bounds.
    pub fn bounds_text(&self) -> Option<String> {
        self.value?;
        let (lo, hi) = self.printed_bounds()?;
        let d = self.decimals;
        Some(format!("[{lo:.d$}, {hi:.d$}]"))
    }
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.value_text())?;
        match self.bounds_text() {
            Some(b) => write!(f, " {b}"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pct(v: f64, lo: f64, hi: f64) -> String {
        Interval::percent(Some(v), Some((lo, hi))).to_string()
    }

    #[test]
    fn bounds_round_outward_and_the_value_to_nearest() {
        // Nearest rounding would print 22.7 and 59.4, both inside the interval.
        assert_eq!(pct(0.4, 0.226_57, 0.594_04), "40.0 [22.6, 59.5]");
        assert_eq!(pct(0.5, 0.244_49, 0.914_77), "50.0 [24.4, 91.5]");
        assert_eq!(pct(0.123_456, 0.1, 0.2), "12.3 [10.0, 20.0]");
        // Bounds that are exact at the printed precision stay where they are.
        assert_eq!(pct(0.5, 0.25, 0.875), "50.0 [25.0, 87.5]");
        assert_eq!(pct(0.5, 0.29, 0.57), "50.0 [29.0, 57.0]");
    }

    #[test]
    fn lopsided_intervals_keep_both_distances() {
        // 16 of 16: the interval reaches down 19.4 points and not at all up; ± would say both.
        assert_eq!(pct(1.0, 0.794_1, 1.0), "100.0 [79.4, 100.0]");
        assert_eq!(pct(0.0, 0.0, 0.602_6), "0.0 [0.0, 60.3]");
    }

    #[test]
    fn the_ends_of_the_scale_hold() {
        // 0 of 20,000: the upper bound 0.018% must not print as a certain 0.0.
        assert_eq!(pct(0.0, 0.0, 0.000_184), "0.0 [0.0, 0.1]");
        assert_eq!(pct(1.0, 0.999_816, 1.0), "100.0 [99.9, 100.0]");
        // Bounds a hair past the scale (float error) are held at 0 and 100, never -0.0.
        assert_eq!(pct(1.0, 0.9, 1.000_000_001), "100.0 [90.0, 100.0]");
        assert_eq!(pct(0.0, -1e-12, 0.1), "0.0 [0.0, 10.0]");
    }

    #[test]
    fn missing_or_non_finite_numbers_print_what_is_known() {
        assert_eq!(Interval::percent(None, Some((0.1, 0.2))).to_string(), "-");
        assert_eq!(Interval::percent(Some(f64::NAN), None).to_string(), "-");
        assert_eq!(Interval::percent(Some(0.25), None).to_string(), "25.0");
        assert_eq!(
            Interval::percent(Some(0.25), Some((f64::NAN, 0.3))).to_string(),
            "25.0"
        );
        assert_eq!(Interval::of(None).to_string(), "-");
    }

    #[test]
    fn other_scales_and_precisions() {
        let plain = Interval::plain(Some(-0.004), Some((-1.234, 0.561)));
        assert_eq!(plain.to_string(), "0.0 [-1.3, 0.6]");
        assert_eq!(plain.decimals(2).to_string(), "0.00 [-1.24, 0.57]");
        // Points already in percent, held to the percentage scale.
        let points = Interval::plain(Some(40.0), Some((22.657, 100.2))).within(0.0, 100.0);
        assert_eq!(points.to_string(), "40.0 [22.6, 100.0]");
        assert_eq!(
            Interval::percent(Some(0.4), Some((0.226_57, 0.594_04)))
                .decimals(0)
                .to_string(),
            "40 [22, 60]"
        );
    }
}
