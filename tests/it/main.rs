//! The one integration-test binary (one link instead of one per file): each former `tests/*.rs`
//! is a module here, sharing the helpers of `common`.
#![allow(clippy::print_stdout, clippy::print_stderr)] // test output

mod common;

mod audit_cli;
mod batch;
mod budget;
mod calc_cli;
mod cli;
mod compare;
mod config;
mod cost;
mod datasets_cli;
mod deploy;
mod docs;
mod failures;
mod found_by;
mod grade_cases;
mod history;
mod hostile_server;
mod import_cli;
mod import_sources;
mod input_bounds;
mod label_fake;
mod merge_shards;
mod metrics_reference;
mod properties;
mod report_cli;
mod report_html;
mod report_search;
mod report_verifier;
mod run_fake;
mod run_report;
mod run_safety;
mod sandbox;
mod search_config;
mod search_run;
mod settings_json;
mod store;
mod store_identity;
mod store_tls;
mod streaming;
mod terminal;
mod verifier_metrics;
mod verify;
mod view;
mod view_bounds;
