//! The exact threshold fraction τ, parsed from decimal or fraction text.

use super::MetricsError;
use num_integer::Integer;
use std::fmt;
use std::str::FromStr;

/// τ as a reduced fraction num/den in [0, 1], keeping the text the user typed.
///
/// Equality and hashing use the value, so "1", "1.0" and "2/2" are the same τ.
#[derive(Debug, Clone)]
pub struct Tau {
    num: u64,
    den: u64,
    text: String,
}

impl Tau {
    /// Builds τ = num/den exactly (reduced); errors when den is 0 or the value exceeds 1.
    pub fn from_fraction(num: u64, den: u64) -> Result<Tau, MetricsError> {
        let text = format!("{num}/{den}");
        Self::new(num as u128, den as u128, text)
    }

    fn new(num: u128, den: u128, text: String) -> Result<Tau, MetricsError> {
        if den == 0 {
            return Err(MetricsError::TauParse {
                text,
                reason: "zero denominator",
            });
        }
        if num > den {
            return Err(MetricsError::TauOutOfRange(text));
        }
        let g = num.gcd(&den).max(1);
        let (num, den) = (num / g, den / g);
        // After reduction num <= den; den may still be large for long decimals.
        let den = u64::try_from(den).map_err(|_| MetricsError::TauParse {
            text: text.clone(),
            reason: "too many digits",
        })?;
        Ok(Tau {
            num: num as u64,
            den,
            text,
        })
    }

    pub fn numer(&self) -> u64 {
        self.num
    }

    pub fn denom(&self) -> u64 {
        self.den
    }

    /// The text the user gave (echoed in reports).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// m = max(⌈τ·k⌉, 1), computed exactly.
    pub fn threshold(&self, k: u64) -> u64 {
        let p = self.num as u128 * k as u128;
        let d = self.den as u128;
        (p.div_ceil(d) as u64).max(1)
    }

    pub fn to_f64(&self) -> f64 {
        self.num as f64 / self.den as f64
    }

    /// The default grid 0.25, 0.5, 0.75, 1.0.
    pub fn default_grid() -> Vec<Tau> {
        ["0.25", "0.5", "0.75", "1.0"]
            .iter()
            .map(|s| s.parse().expect("default tau grid parses"))
            .collect()
    }
}

impl PartialEq for Tau {
    fn eq(&self, other: &Tau) -> bool {
        (self.num, self.den) == (other.num, other.den)
    }
}

impl Eq for Tau {}

impl std::hash::Hash for Tau {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (self.num, self.den).hash(state);
    }
}

impl fmt::Display for Tau {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn parse_uint(s: &str, text: &str) -> Result<u128, MetricsError> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(MetricsError::TauParse {
            text: text.to_string(),
            reason: "not a number",
        });
    }
    s.parse::<u128>().map_err(|_| MetricsError::TauParse {
        text: text.to_string(),
        reason: "too many digits",
    })
}

impl FromStr for Tau {
    type Err = MetricsError;

    fn from_str(s: &str) -> Result<Tau, MetricsError> {
        let text = s.trim().to_string();
        if text.starts_with('-') {
            return Err(MetricsError::TauOutOfRange(text));
        }
        let body = text.strip_prefix('+').unwrap_or(&text);
        if let Some((a, b)) = body.split_once('/') {
            let num = parse_uint(a.trim(), &text)?;
            let den = parse_uint(b.trim(), &text)?;
            return Tau::new(num, den, text.clone());
        }
        let (int_part, frac_part) = match body.split_once('.') {
            Some((i, f)) => (i, f),
            None => (body, ""),
        };
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(MetricsError::TauParse {
                text,
                reason: "not a number",
            });
        }
        let int_v = if int_part.is_empty() {
            0
        } else {
            parse_uint(int_part, &text)?
        };
        let frac_v = if frac_part.is_empty() {
            0
        } else {
            parse_uint(frac_part, &text)?
        };
        if frac_part.len() > 18 {
            return Err(MetricsError::TauParse {
                text,
                reason: "too many digits",
            });
        }
        let den = 10u128.pow(frac_part.len() as u32);
        let num = int_v
            .checked_mul(den)
            .and_then(|v| v.checked_add(frac_v))
            .ok_or(MetricsError::TauParse {
                text: text.clone(),
                reason: "too many digits",
            })?;
        Tau::new(num, den, text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Tau {
        s.parse().unwrap()
    }

    #[test]
    fn thresholds_are_exact_where_floats_fail() {
        // 0.28 * 25 = 7.000000000000001 in f64, which would give 8.
        assert_eq!(t("0.28").threshold(25), 7);
        assert_eq!(t("0.7").threshold(10), 7);
        assert_eq!(t("1/3").threshold(9), 3);
        assert_eq!(t("1/3").threshold(10), 4);
        assert_eq!(t("0.5").threshold(16), 8);
        assert_eq!(t("1.0").threshold(16), 16);
    }

    #[test]
    fn equality_is_by_value_not_text() {
        assert_eq!(t("1"), t("1.0"));
        assert_eq!(t("0.5"), t("1/2"));
        assert_ne!(t("0.5"), t("0.25"));
        assert_eq!(t("1.0").text(), "1.0");
    }

    #[test]
    fn zero_tau_means_threshold_one() {
        assert_eq!(t("0").threshold(16), 1);
        assert_eq!(t("0.0").threshold(4), 1);
    }

    #[test]
    fn parses_forms_and_reduces() {
        assert_eq!((t(".5").numer(), t(".5").denom()), (1, 2));
        assert_eq!((t("2/6").numer(), t("2/6").denom()), (1, 3));
        assert_eq!((t("1").numer(), t("1").denom()), (1, 1));
        assert_eq!(t("0.25").text(), "0.25");
    }

    #[test]
    fn rejects_bad_text() {
        assert!(matches!(
            "abc".parse::<Tau>(),
            Err(MetricsError::TauParse { .. })
        ));
        assert!(matches!(
            "".parse::<Tau>(),
            Err(MetricsError::TauParse { .. })
        ));
        assert!(matches!(
            "1/0".parse::<Tau>(),
            Err(MetricsError::TauParse { .. })
        ));
        assert!(matches!(
            "0.5.5".parse::<Tau>(),
            Err(MetricsError::TauParse { .. })
        ));
        assert!(matches!(
            "1e-3".parse::<Tau>(),
            Err(MetricsError::TauParse { .. })
        ));
        assert_eq!(
            "1.5".parse::<Tau>(),
            Err(MetricsError::TauOutOfRange("1.5".into()))
        );
        assert_eq!(
            "-0.1".parse::<Tau>(),
            Err(MetricsError::TauOutOfRange("-0.1".into()))
        );
        assert_eq!(
            "3/2".parse::<Tau>(),
            Err(MetricsError::TauOutOfRange("3/2".into()))
        );
    }
}
