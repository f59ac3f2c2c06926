//! Notes: what library code tells the user while it works (warnings, poll and progress lines).
//! The command layer decides where they go (stderr, nowhere, a buffer in tests); below it
//! nothing prints.

use std::sync::{Arc, Mutex};

type Sink = Arc<dyn Fn(&str) + Send + Sync>;

/// A cloneable handle to where notes go; [`Notes::default`] drops them.
#[derive(Clone, Default)]
pub struct Notes(Option<Sink>);

impl Notes {
    /// Notes go to `sink`, one line per call.
    pub fn to(sink: impl Fn(&str) + Send + Sync + 'static) -> Notes {
        Notes(Some(Arc::new(sink)))
    }

    /// Notes are kept in the returned buffer (tests, and callers that print them later).
    pub fn collect() -> (Notes, Arc<Mutex<Vec<String>>>) {
        let kept = Arc::new(Mutex::new(Vec::new()));
        let sink = kept.clone();
        let notes = Notes::to(move |line| {
            sink.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(line.to_string())
        });
        (notes, kept)
    }

    /// One line for the user.
    pub fn say(&self, line: &str) {
        if let Some(sink) = &self.0 {
            sink(line);
        }
    }

    /// `note: …`
    pub fn note(&self, text: &str) {
        self.say(&format!("note: {text}"));
    }

    /// `warning: …`
    pub fn warn(&self, text: &str) {
        self.say(&format!("warning: {text}"));
    }
}

impl std::fmt::Debug for Notes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Notes(sink)"
        } else {
            "Notes(none)"
        })
    }
}
