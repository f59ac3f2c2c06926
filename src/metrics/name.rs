//! The one spelling and the one parser of metric names: [`MetricKind`]'s `Display` (the config
//! file's `g_pass@16_t0.5`), [`MetricKind::label`] (the reports' and the paper's `G-Pass@16_0.5`),
//! and `FromStr`, which reads both.

use super::{Aggregation, MetricKind, Tau};
use std::fmt;
use std::str::FromStr;

impl fmt::Display for MetricKind {
    /// The config-file name: `greedy_acc`, `pass@16`, `g_pass@16_t0.5`, `mg_pass@16`,
    /// `bon@16_min`, `wmaj@16_min`, `maj@4`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetricKind::BestOfN { size, aggregation } => {
                write!(f, "bon@{size}_{}", aggregation.name())
            }
            MetricKind::WeightedMajority { size, aggregation } => {
                write!(f, "wmaj@{size}_{}", aggregation.name())
            }
            MetricKind::MajorityAt { size } => write!(f, "maj@{size}"),
            MetricKind::Greedy => write!(f, "greedy_acc"),
            MetricKind::PassAtK { k } => write!(f, "pass@{k}"),
            MetricKind::GPassAtK { k, tau } => write!(f, "g_pass@{k}_t{tau}"),
            MetricKind::MGPassAtK { k } => write!(f, "mg_pass@{k}"),
            MetricKind::Majority => write!(f, "maj@n"),
        }
    }
}

impl MetricKind {
    /// The reports' (and the paper's) spelling: `Greedy`, `Pass@16`, `G-Pass@16_0.5`, `mG-Pass@16`;
    /// the verifier metrics and maj@n as in the config file.
    pub fn label(&self) -> String {
        match self {
            MetricKind::BestOfN { .. }
            | MetricKind::WeightedMajority { .. }
            | MetricKind::MajorityAt { .. } => self.to_string(),
            MetricKind::Greedy => "Greedy".into(),
            MetricKind::PassAtK { k } => format!("Pass@{k}"),
            MetricKind::GPassAtK { k, tau } => format!("G-Pass@{k}_{}", tau.text()),
            MetricKind::MGPassAtK { k } => format!("mG-Pass@{k}"),
            MetricKind::Majority => "maj@n".into(),
        }
    }
}

/// Why a name is not a metric; the message names it and says what would be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetricNameError {
    #[error(
        "unknown metric {name:?}: use greedy_acc, pass@K, g_pass@K_tT, mg_pass@K, bon@N_AGG, \
         wmaj@N_AGG or maj@N{}",
        hint.as_ref().map(|s| format!("; did you mean {s:?}?")).unwrap_or_default()
    )]
    Unknown { name: String, hint: Option<String> },
    #[error("metric {name:?}: {aggregation:?} is not one of min, mean, last, product")]
    Aggregation { name: String, aggregation: String },
    #[error("metric {name:?}: {reason}")]
    Tau { name: String, reason: String },
}

/// The config-file names the "did you mean" hint is chosen from.
const EXAMPLES: [&str; 7] = [
    "greedy_acc",
    "pass@16",
    "g_pass@16_t0.5",
    "mg_pass@16",
    "bon@16_min",
    "wmaj@16_min",
    "maj@4",
];

impl MetricNameError {
    /// `name` is no metric; the hint is the closest config-file example, if any is close.
    pub fn unknown(name: &str) -> MetricNameError {
        MetricNameError::Unknown {
            name: name.to_string(),
            hint: crate::util::closest(name, EXAMPLES.into_iter()).map(str::to_string),
        }
    }
}

impl FromStr for MetricKind {
    type Err = MetricNameError;

    /// Either spelling: the config file's (`greedy_acc`, `pass@16`, `g_pass@16_t0.5`,
    /// `mg_pass@16`, `bon@16_min`, `wmaj@16_min`, `maj@4`, `maj@n`) or the reports' and the
    /// paper's (`Greedy`, `Pass@16`, `G-Pass@16_0.5`, `mG-Pass@16`). k and N are at least 1.
    fn from_str(name: &str) -> Result<MetricKind, MetricNameError> {
        let bad = || MetricNameError::unknown(name);
        let k_of = |s: &str| match s.parse::<u64>() {
            Ok(k) if k >= 1 => Ok(k),
            _ => Err(bad()),
        };
        let with_aggregation = |rest: &str| {
            let (k, agg) = rest.split_once('_').ok_or_else(bad)?;
            let aggregation =
                Aggregation::parse(agg).ok_or_else(|| MetricNameError::Aggregation {
                    name: name.to_string(),
                    aggregation: agg.to_string(),
                })?;
            Ok((k_of(k)?, aggregation))
        };
        let tau_of = |t: &str| {
            t.parse::<Tau>().map_err(|e| MetricNameError::Tau {
                name: name.to_string(),
                reason: e.to_string(),
            })
        };
        if let Some(rest) = name.strip_prefix("bon@") {
            let (size, aggregation) = with_aggregation(rest)?;
            return Ok(MetricKind::BestOfN { size, aggregation });
        }
        if let Some(rest) = name.strip_prefix("wmaj@") {
            let (size, aggregation) = with_aggregation(rest)?;
            return Ok(MetricKind::WeightedMajority { size, aggregation });
        }
        if name == "maj@n" {
            return Ok(MetricKind::Majority);
        }
        if let Some(rest) = name.strip_prefix("maj@") {
            return Ok(MetricKind::MajorityAt { size: k_of(rest)? });
        }
        if name == "greedy_acc" || name.eq_ignore_ascii_case("greedy") {
            return Ok(MetricKind::Greedy);
        }
        if let Some(rest) =
            (name.strip_prefix("mg_pass@")).or_else(|| name.strip_prefix("mG-Pass@"))
        {
            return Ok(MetricKind::MGPassAtK { k: k_of(rest)? });
        }
        if let Some(rest) = name.strip_prefix("g_pass@") {
            let (k, t) = rest.split_once("_t").ok_or_else(bad)?;
            let tau = tau_of(t)?;
            return Ok(MetricKind::GPassAtK { k: k_of(k)?, tau });
        }
        if let Some(rest) = name.strip_prefix("G-Pass@") {
            let (k, t) = rest.split_once('_').ok_or_else(bad)?;
            let tau = tau_of(t)?;
            return Ok(MetricKind::GPassAtK { k: k_of(k)?, tau });
        }
        if let Some(rest) = (name.strip_prefix("pass@")).or_else(|| name.strip_prefix("Pass@")) {
            return Ok(MetricKind::PassAtK { k: k_of(rest)? });
        }
        Err(bad())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_kind() -> Vec<MetricKind> {
        let tau = |t: &str| t.parse::<Tau>().unwrap();
        let mut all = vec![MetricKind::Greedy, MetricKind::Majority];
        for k in [1, 4, 16] {
            all.push(MetricKind::PassAtK { k });
            all.push(MetricKind::MGPassAtK { k });
            all.push(MetricKind::MajorityAt { size: k });
            for t in ["0", "0.25", "0.5", "1.0", "1", "2/3"] {
                all.push(MetricKind::GPassAtK { k, tau: tau(t) });
            }
            for (_, aggregation) in Aggregation::ALL {
                all.push(MetricKind::BestOfN {
                    size: k,
                    aggregation,
                });
                all.push(MetricKind::WeightedMajority {
                    size: k,
                    aggregation,
                });
            }
        }
        all
    }

    #[test]
    fn both_spellings_of_every_metric_read_back_as_it() {
        for m in every_kind() {
            assert_eq!(m.to_string().parse::<MetricKind>(), Ok(m.clone()), "{m}");
            assert_eq!(
                m.label().parse::<MetricKind>(),
                Ok(m.clone()),
                "{}",
                m.label()
            );
            // The label keeps tau as written, so it reads back to the same text.
            assert_eq!(m.label().parse::<MetricKind>().unwrap().label(), m.label());
        }
    }

    #[test]
    fn config_and_paper_names_name_the_same_metric() {
        let same = [
            ("g_pass@16_t1.0", "G-Pass@16_1.0"),
            ("g_pass@4_t0.5", "G-Pass@4_0.5"),
            ("mg_pass@16", "mG-Pass@16"),
            ("pass@8", "Pass@8"),
            ("greedy_acc", "Greedy"),
            ("greedy_acc", "greedy"),
        ];
        for (config, paper) in same {
            let (a, b) = (config.parse::<MetricKind>(), paper.parse::<MetricKind>());
            assert!(a.is_ok(), "{config}: {a:?}");
            assert_eq!(a, b, "{config} vs {paper}");
        }
    }

    #[test]
    fn bad_names_say_why() {
        for bad in [
            "pass@0",
            "G-Pass@16",
            "g_pass@16",
            "mG-Pass@x",
            "pass@k",
            "bon@4",
            "accuracy",
        ] {
            let e = bad.parse::<MetricKind>().unwrap_err();
            assert!(matches!(e, MetricNameError::Unknown { .. }), "{bad}: {e}");
            assert!(e.to_string().contains(&format!("{bad:?}")), "{e}");
        }
        let e = "g_pass@16_t2".parse::<MetricKind>().unwrap_err();
        assert!(matches!(e, MetricNameError::Tau { .. }), "{e}");
        let e = "bon@16_max".parse::<MetricKind>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "metric \"bon@16_max\": \"max\" is not one of min, mean, last, product"
        );
        let e = "g_pas@16_t0.5".parse::<MetricKind>().unwrap_err();
        assert!(
            e.to_string()
                .ends_with("; did you mean \"g_pass@16_t0.5\"?"),
            "{e}"
        );
    }
}
