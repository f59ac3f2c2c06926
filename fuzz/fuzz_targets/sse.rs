//! The server-sent-events reader: never panics, and the network's chunking never changes the
//! reply (an event may straddle any two reads).
//!
//! Input: one byte that sets the piece size, then the stream's bytes.
#![no_main]

use gpassk::client::{assemble_pieces, ChatResponse, ErrorClass};
use libfuzzer_sys::fuzz_target;

const LIMIT: u64 = 1 << 20;

/// The reply without its timing (which depends on the clock, not the bytes).
fn outcome(
    r: Result<(ChatResponse, usize), (ErrorClass, String)>,
) -> Result<(ChatResponse, usize), ErrorClass> {
    match r {
        Ok((mut resp, n)) => {
            resp.stream = None;
            Ok((resp, n))
        }
        Err((class, _)) => Err(class),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&size, body)) = data.split_first() else {
        return;
    };
    let size = usize::from(size.max(1));
    let whole = outcome(assemble_pieces([body], LIMIT));
    let pieces = outcome(assemble_pieces(body.chunks(size), LIMIT));
    assert_eq!(whole, pieces, "pieces of {size} bytes read differently");
    if let Ok((resp, _)) = &whole {
        for c in &resp.choices {
            assert!(c.finish_reason.is_some(), "a choice without finish_reason");
        }
    }
});
