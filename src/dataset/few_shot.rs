//! Few-shot examples: solved problems shown as earlier chat turns, from a dataset or given inline.

use std::collections::BTreeSet;

use super::{load, DatasetError, FieldMap};

/// Where few-shot examples come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FewShot {
    /// No examples (zero-shot).
    None,
    /// The first `count` problems of a dataset (registry name or `.jsonl` path), in file order.
    FromDataset {
        source: String,
        fields: Option<FieldMap>,
        count: usize,
    },
    /// Examples written out: (question, answer text shown as the assistant's reply).
    Inline(Vec<(String, String)>),
}

impl FewShot {
    /// The (question, answer text) pairs to show before each evaluated question.
    ///
    /// When the examples come from the dataset under evaluation (`evaluated_name` equals the
    /// source), problems whose id is in `evaluated_ids` are skipped, so no question is its own
    /// example. The answer text is [`super::Problem::worked_answer`].
    pub fn examples(
        &self,
        evaluated_name: &str,
        evaluated_ids: &BTreeSet<String>,
    ) -> Result<Vec<(String, String)>, DatasetError> {
        match self {
            FewShot::None => Ok(Vec::new()),
            FewShot::Inline(pairs) => Ok(pairs.clone()),
            FewShot::FromDataset {
                source,
                fields,
                count,
            } => {
                let dataset = load(source, fields.as_ref())?;
                let same = dataset.name == evaluated_name || source == evaluated_name;
                let examples: Vec<(String, String)> = dataset
                    .problems
                    .iter()
                    .filter(|p| !(same && evaluated_ids.contains(&p.id)))
                    .take(*count)
                    .map(|p| (p.question.clone(), p.worked_answer()))
                    .collect();
                if examples.len() < *count {
                    return Err(DatasetError::NotEnoughExamples {
                        source_name: source.clone(),
                        requested: *count,
                        available: examples.len(),
                    });
                }
                Ok(examples)
            }
        }
    }
}
