//! Property tests (proptest): invariants of the metrics, the intervals and the grader's canonical
//! forms, checked on generated inputs. Case counts are kept small so `cargo test` stays fast; a
//! longer search is `PROPTEST_CASES=100000 cargo test --test it properties::`.

mod grade;
mod metrics;
mod stats;
