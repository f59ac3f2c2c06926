//! The config reader on arbitrary text: TOML text to resolved settings never panics, and a bad
//! config is an error of one line (the house rule for every bad input).
//!
//! Input: the config text (lossy UTF-8).
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Err(e) = gpassk::config::load_str(&text, Path::new("fuzz.toml")) {
        let message = e.to_string();
        assert!(!message.trim().is_empty(), "an empty error");
        assert!(
            !message.contains('\n'),
            "a config error of several lines: {message:?}"
        );
    }
});
