//! Test-time tree search (rStar-Math-style MCTS over code-augmented steps): the pure engine.
//!
//! The engine is generic over three small traits so the runner can drive it with the real
//! client and sandbox and tests with scripted fakes: [`Policy`] proposes steps, [`Reward`]
//! scores nodes, [`Executor`] runs the cumulative code. It sees a [`SearchInput`], which holds
//! the question and nothing else: the gold answer cannot reach a search.

mod mcts;
pub mod requests;
pub mod sandbox;
mod step;

pub use crate::config::{AnswerSelect, RewardMode, SearchSettings, TerminalReward};
pub use mcts::{search, uct, Node, NodeState, SearchOutcome, SearchStats, Tree};
pub use step::{last_boxed, parse_step, Step, END_OF_STEP};

use crate::dataset::Problem;

/// What a search is given about a problem: its id and question. No gold answer, by construction.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SearchInput {
    pub problem_id: String,
    pub question: String,
}

impl SearchInput {
    /// The one way the runner builds a search's input from a dataset problem.
    pub fn from_problem(p: &Problem) -> SearchInput {
        SearchInput {
            problem_id: p.id.clone(),
            question: p.question.clone(),
        }
    }
}

/// One policy request: continue the partial solution with `n` candidate next steps.
#[derive(Debug, Clone, PartialEq)]
pub struct Expand<'a> {
    pub input: &'a SearchInput,
    /// The steps so far, oldest first.
    pub prefix: &'a [String],
    pub n: u32,
    /// The request's seed, derived from the search seed and the call number.
    pub seed: u64,
}

/// A policy's reply: candidate steps and, when the server says, the tokens they cost.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Proposal {
    pub steps: Vec<String>,
    pub tokens: Option<u64>,
}

/// Why a model call gave nothing usable; the search stops and records it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct CallFailed(pub String);

/// Proposes continuation steps.
pub trait Policy {
    fn expand(&mut self, req: &Expand) -> Result<Proposal, CallFailed>;
}

/// A reward model's verdict on one node.
#[derive(Debug, Clone, PartialEq)]
pub enum Score {
    /// A score in [0, 1].
    Value(f64),
    /// The reply held no readable score: counted, never read as 0.
    Unparseable(String),
}

/// Scores the last step of a partial solution.
pub trait Reward {
    fn score(&mut self, input: &SearchInput, steps: &[String]) -> Result<Score, CallFailed>;
}

/// The result of running a path's cumulative code.
#[derive(Debug, Clone, PartialEq)]
pub enum Exec {
    Ok { stdout: String },
    Failed { stderr: String },
    TimedOut,
}

/// Runs model-written code (the sandbox in production).
pub trait Executor {
    fn run(&mut self, code: &str) -> Exec;
}
