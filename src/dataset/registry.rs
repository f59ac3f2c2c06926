//! The table of shipped datasets: files, field mapping, answer post-processing, prompt, language.

use super::Language;

/// How a raw answer becomes the reference answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerPost {
    /// Kept as written (trimmed).
    Verbatim,
    /// GSM8K: the text after the last `#### `, thousands separators removed; the reasoning before
    /// it (calculator notes `<<…>>` removed) is kept as the `solution` field.
    AfterHashes,
    /// AMC23: a whole number written as a float (`27.0`) becomes `27`.
    IntegerFloat,
    /// LiveMathBench: an answer wrapped in `$…$` (or `$$…$$`) loses its math delimiters.
    StripDollars,
}

/// One file of a registered dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Source {
    /// Path relative to the datasets folder.
    pub file: &'static str,
    /// Subset every problem of this file belongs to (datasets made of several files).
    pub subset: Option<&'static str>,
}

/// A registered dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub name: &'static str,
    /// One line for `gpassk datasets`.
    pub description: &'static str,
    /// Files in a fixed order (the order problems are listed and hashed in).
    pub sources: &'static [Source],
    /// Field holding the id; `None` numbers the lines from 0.
    pub id: Option<&'static str>,
    pub question: &'static str,
    pub answer: &'static str,
    /// Field holding the subset, for single-file datasets.
    pub subset: Option<&'static str>,
    /// Fields kept in [`super::Problem::fields`] when present.
    pub extra: &'static [&'static str],
    pub post: AnswerPost,
    pub language: Language,
    /// A generated toy set for demos, not a benchmark.
    pub demo: bool,
    /// Keep only the problems whose `field` (an extra field) has this value, e.g. MATH500's level 5.
    pub only: Option<(&'static str, &'static str)>,
}

impl Entry {
    /// The prompt template used unless the configuration overrides it.
    pub fn default_template(&self) -> &'static str {
        self.language.default_template()
    }

    /// Subset names fixed by the files, in order (empty when subsets come from a field or are absent).
    pub fn file_subsets(&self) -> Vec<&'static str> {
        self.sources.iter().filter_map(|s| s.subset).collect()
    }
}

/// Every shipped dataset, in the order `gpassk datasets` lists them.
pub const REGISTRY: &[Entry] = &[
    Entry {
        name: "livemathbench_202412",
        description: "LiveMathBench v202412, English (CNMO, CCEE, AMC, WLPMC)",
        sources: &[
            Source {
                file: "livemathbench_202412/CNMO_en.jsonl",
                subset: Some("CNMO"),
            },
            Source {
                file: "livemathbench_202412/CCEE_en.jsonl",
                subset: Some("CCEE"),
            },
            Source {
                file: "livemathbench_202412/AMC_en.jsonl",
                subset: Some("AMC"),
            },
            Source {
                file: "livemathbench_202412/WLPMC_en.jsonl",
                subset: Some("WLPMC"),
            },
        ],
        id: None,
        question: "question",
        answer: "answer",
        subset: None,
        extra: &["options", "question_type"],
        post: AnswerPost::StripDollars,
        language: Language::English,
        demo: false,
        only: None,
    },
    Entry {
        name: "livemathbench_202412_hard",
        description: "LiveMathBench v202412 hard split, English",
        sources: &[Source {
            file: "livemathbench_202412/hard_en.jsonl",
            subset: None,
        }],
        id: None,
        question: "question",
        answer: "answer",
        subset: None,
        extra: &["options", "question_type"],
        post: AnswerPost::StripDollars,
        language: Language::English,
        demo: false,
        only: None,
    },
    Entry {
        name: "math500",
        description: "MATH-500 (PRM800K test subset); subsets are subjects",
        sources: &[Source {
            file: "math500.jsonl",
            subset: None,
        }],
        id: Some("unique_id"),
        question: "problem",
        answer: "answer",
        subset: Some("subject"),
        extra: &["level", "solution"],
        post: AnswerPost::Verbatim,
        language: Language::English,
        demo: false,
        only: None,
    },
    Entry {
        name: "math500_l5",
        description: "MATH-500 level 5 only (the paper's MATH500-L5, 134 problems)",
        sources: &[Source {
            file: "math500.jsonl",
            subset: None,
        }],
        id: Some("unique_id"),
        question: "problem",
        answer: "answer",
        subset: Some("subject"),
        extra: &["level", "solution"],
        post: AnswerPost::Verbatim,
        language: Language::English,
        demo: false,
        only: Some(("level", "5")),
    },
    Entry {
        name: "aime24",
        description: "AIME 2024 I and II",
        sources: &[Source {
            file: "aime24.jsonl",
            subset: None,
        }],
        id: Some("id"),
        question: "problem",
        answer: "answer",
        subset: None,
        extra: &["solution", "url"],
        post: AnswerPost::Verbatim,
        language: Language::English,
        demo: false,
        only: None,
    },
    Entry {
        name: "amc23",
        description: "AMC 12 2023",
        sources: &[Source {
            file: "amc23.jsonl",
            subset: None,
        }],
        id: Some("id"),
        question: "problem",
        answer: "answer",
        subset: None,
        extra: &["url"],
        post: AnswerPost::IntegerFloat,
        language: Language::English,
        demo: false,
        only: None,
    },
    Entry {
        name: "gsm8k",
        description: "GSM8K test split",
        sources: &[Source {
            file: "gsm8k_test.jsonl",
            subset: None,
        }],
        id: None,
        question: "question",
        answer: "answer",
        subset: None,
        extra: &[],
        post: AnswerPost::AfterHashes,
        language: Language::English,
        demo: false,
        only: None,
    },
    Entry {
        name: "cmath",
        description: "CMATH test split (Chinese elementary school)",
        sources: &[Source {
            file: "cmath.jsonl",
            subset: None,
        }],
        id: None,
        question: "question",
        answer: "answer",
        subset: None,
        extra: &["grade", "reasoning_step", "num_digits"],
        post: AnswerPost::Verbatim,
        language: Language::Chinese,
        demo: false,
        only: None,
    },
    Entry {
        name: "arith_demo",
        description: "DEMO SET: generated one-operation arithmetic (scripts/gen-arith-demo.py)",
        sources: &[Source {
            file: "arith_demo.jsonl",
            subset: None,
        }],
        id: Some("id"),
        question: "question",
        answer: "answer",
        subset: None,
        extra: &["solution"],
        post: AnswerPost::Verbatim,
        language: Language::English,
        demo: true,
        only: None,
    },
];

/// The registered dataset with this exact name.
pub fn lookup(name: &str) -> Option<&'static Entry> {
    REGISTRY.iter().find(|e| e.name == name)
}

/// Registered names, in listing order.
pub fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|e| e.name).collect()
}

/// The registered name closest to `name`: fewest `_`-separated parts of `name` missing from it,
/// then smallest case-insensitive edit distance.
pub fn closest(name: &str) -> Option<&'static str> {
    let wanted = name.to_lowercase();
    REGISTRY
        .iter()
        .map(|e| {
            let missing = wanted
                .split(['_', '-', ' '])
                .filter(|part| !part.is_empty() && !e.name.contains(part))
                .count();
            (missing, edit_distance(&wanted, e.name), e.name)
        })
        .min()
        .map(|(_, _, n)| n)
}

/// Levenshtein distance over chars.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_complete() {
        let mut names = names();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len());
        for wanted in [
            "livemathbench_202412",
            "livemathbench_202412_hard",
            "math500",
            "aime24",
            "amc23",
            "gsm8k",
            "cmath",
            "arith_demo",
        ] {
            assert!(lookup(wanted).is_some(), "{wanted} not registered");
        }
    }

    #[test]
    fn only_the_demo_set_is_marked_demo() {
        let demos: Vec<&str> = REGISTRY.iter().filter(|e| e.demo).map(|e| e.name).collect();
        assert_eq!(demos, ["arith_demo"]);
        assert!(lookup("arith_demo").unwrap().description.contains("DEMO"));
    }

    #[test]
    fn livemathbench_subsets_in_fixed_order() {
        let entry = lookup("livemathbench_202412").unwrap();
        assert_eq!(entry.file_subsets(), ["CNMO", "CCEE", "AMC", "WLPMC"]);
    }

    #[test]
    fn cmath_is_chinese() {
        assert_eq!(lookup("cmath").unwrap().language, Language::Chinese);
        assert_eq!(lookup("gsm8k").unwrap().language, Language::English);
    }

    #[test]
    fn edit_distance_basics() {
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("math500", "math500"), 0);
    }

    #[test]
    fn closest_suggests_typos_and_prefixes() {
        assert_eq!(closest("math50"), Some("math500"));
        assert_eq!(closest("gsm8"), Some("gsm8k"));
        assert_eq!(closest("AIME24"), Some("aime24"));
        assert_eq!(closest("livemathbench"), Some("livemathbench_202412"));
        assert_eq!(
            closest("livemathbench_hard"),
            Some("livemathbench_202412_hard")
        );
    }
}
