//! `SearchShared`: what the tree searches of one `strategy = "mcts"` model share (settings,
//! questions, reward client, sandbox, cache), held in what its workers share (`ModelShared`).

use super::cache::RequestCache;
use crate::client::Client;
use crate::config::SearchSettings;
use crate::rundir::RunDir;
use crate::search::sandbox::Sandbox;
use crate::search::SearchInput;
use std::sync::Arc;

/// What the searches of one model share beside the sampling context.
pub struct SearchShared {
    pub settings: SearchSettings,
    /// The question of each problem, in plan order (no gold answer).
    pub inputs: Arc<Vec<SearchInput>>,
    /// The reward model's client (chat or `/pooling` URL); None with `reward_mode = "none"`.
    pub reward: Option<Client>,
    pub sandbox: Sandbox,
    pub cache: RequestCache,
    pub run_dir: RunDir,
    /// Per server (policy, reward): held by the first live call until a reply comes, so a bad
    /// key or unknown model costs one request, not one per concurrent search (as for sampling).
    pub first: [tokio::sync::Mutex<bool>; 2],
    /// Set when the server refused to continue an assistant message (HTTP 400): from then on
    /// prefixes are restated in the user turn, as with `prefix = "restate"`.
    pub restate: std::sync::atomic::AtomicBool,
}
