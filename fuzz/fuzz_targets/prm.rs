//! The PRM and chat-judge reply parsers (search rewards, the verifier): never panic; a score read
//! is finite and in [0, 1]; an unreadable reply is kept bounded; a step's answer is its text's.
//!
//! Input: one selector byte, then the reply (text, or JSON for a `/pooling` reply).
#![no_main]

use gpassk::search::requests::{parse_pooling, parse_pooling_steps, parse_score};
use gpassk::search::{last_boxed, parse_step, Score};
use libfuzzer_sys::fuzz_target;

fn check(score: &Score) {
    match score {
        Score::Value(v) => assert!(v.is_finite() && (0.0..=1.0).contains(v), "score {v}"),
        Score::Unparseable(kept) => assert!(kept.chars().count() <= 200, "kept unbounded"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    match which % 3 {
        0 => check(&parse_score(&text)),
        1 => {
            let Ok(reply) = serde_json::from_slice::<serde_json::Value>(rest) else {
                return;
            };
            check(&parse_pooling(&reply));
            let steps = usize::from(which >> 2);
            match parse_pooling_steps(&reply, steps) {
                Ok(scores) => {
                    assert_eq!(scores.len(), steps);
                    assert!(scores.iter().all(|v| (0.0..=1.0).contains(v)));
                }
                Err(kept) => assert!(kept.chars().count() <= 200, "kept unbounded"),
            }
        }
        _ => {
            let step = parse_step(&text);
            assert!(step.code.is_empty() || text.contains(step.code.trim_end()));
            if let Some(answer) = &step.answer {
                assert!(text.contains(answer.as_str()), "answer not from the text");
            }
            assert_eq!(step.answer, last_boxed(&text));
        }
    }
});
