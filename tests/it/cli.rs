//! The top-level command line: the fake server is not part of the product.

use crate::common::{run, stderr, stdout};

#[test]
fn serve_fake_is_not_a_subcommand() {
    let out = run(&["serve-fake", "--port", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("serve-fake"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn help_does_not_mention_serve_fake() {
    let out = run(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = stdout(&out);
    assert!(help.contains("calc"), "{help}");
    assert!(!help.contains("serve-fake"), "{help}");
}
