//! The MCTS loop: UCT selection, expansion with code execution and reward scoring, terminal
//! detection, back-propagation, the final answer; the tree and its statistics.

use super::step::parse_step;
use super::{
    AnswerSelect, CallFailed, Exec, Executor, Expand, Policy, Reward, RewardMode, Score,
    SearchInput, SearchSettings, TerminalReward,
};
pub use crate::rundir::record::SearchStats;
use crate::util::SplitMix64;
use serde::{Deserialize, Serialize};

/// What a node is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum NodeState {
    Root,
    /// An intermediate step that can be expanded.
    Step,
    /// A step holding `\boxed{answer}`: terminal.
    Answer {
        answer: String,
    },
    /// A step at `max_depth` without an answer: terminal, value 0.
    DepthLimit,
    /// Its code failed or timed out (or the step was empty): never expanded, never selected.
    Dead {
        reason: String,
    },
}

/// One node of the search tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    pub id: usize,
    pub parent: Option<usize>,
    pub depth: u32,
    /// The step's text as the policy wrote it (empty for the root).
    pub step: String,
    pub state: NodeState,
    /// The reward model's score of this node, when it gave one.
    pub reward: Option<f64>,
    /// The reward reply that held no score (counted in the statistics).
    pub reward_unparseable: Option<String>,
    /// The cumulative code's output at this step.
    pub stdout: Option<String>,
    pub visits: u64,
    pub value_sum: f64,
    pub children: Vec<usize>,
    /// Nothing below it can be selected any more.
    pub closed: bool,
}

/// The whole tree, root first; serialised as `trees/<model>/<problem>/<search>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tree {
    pub nodes: Vec<Node>,
}

/// A finished search: its answer (None when no answer step was reached), the chosen path's
/// steps, its statistics and its tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchOutcome {
    pub seed: u64,
    pub answer: Option<String>,
    pub answer_node: Option<usize>,
    pub path: Vec<String>,
    pub stats: SearchStats,
    pub tree: Tree,
}

/// Why a search stopped before its simulations ran out.
enum Stop {
    Cap,
    Failed(CallFailed),
}

/// The UCT score of rStar's code: Q/N + c·sqrt(ln N_parent / N); unvisited children score
/// above every visited one (rStar gives them 999), the exploration term is 0 while N_parent ≤ 1.
pub fn uct(value_sum: f64, visits: u64, parent_visits: u64, c: f64) -> f64 {
    if visits == 0 {
        return f64::INFINITY;
    }
    let n = visits as f64;
    let explore = if parent_visits == 0 {
        0.0
    } else {
        c * ((parent_visits as f64).ln() / n).sqrt()
    };
    value_sum / n + explore
}

/// Runs one search. `reward` is None when `reward_mode = "none"`.
pub fn search<'a>(
    input: &'a SearchInput,
    settings: &'a SearchSettings,
    seed: u64,
    policy: &'a mut dyn Policy,
    reward: Option<&'a mut dyn Reward>,
    exec: &'a mut dyn Executor,
) -> SearchOutcome {
    let reward = reward.filter(|_| settings.reward_mode != RewardMode::None);
    let root = Node {
        id: 0,
        parent: None,
        depth: 0,
        step: String::new(),
        state: NodeState::Root,
        reward: None,
        reward_unparseable: None,
        stdout: None,
        visits: 0,
        value_sum: 0.0,
        children: Vec::new(),
        closed: false,
    };
    let mut e = Engine {
        input,
        s: settings,
        seed,
        rng: SplitMix64::new(seed),
        nodes: vec![root],
        stats: SearchStats {
            tokens: Some(0),
            ..SearchStats::default()
        },
        answers: Vec::new(),
        policy,
        reward,
        exec,
    };
    while e.stats.simulations < settings.num_simulations && !e.nodes[0].closed {
        e.stats.simulations += 1;
        match e.simulate() {
            Ok(()) => {}
            Err(Stop::Cap) => {
                e.stats.cap_hit = true;
                break;
            }
            Err(Stop::Failed(f)) => {
                e.stats.failed = Some(f.0);
                break;
            }
        }
    }
    e.finish()
}

struct Engine<'a> {
    input: &'a SearchInput,
    s: &'a SearchSettings,
    seed: u64,
    /// Tie-breaks between equally scored children: the project's one seeded generator, so a
    /// dependency upgrade never changes a search.
    rng: SplitMix64,
    nodes: Vec<Node>,
    stats: SearchStats,
    /// Normalised answers of valued answer steps, in the order they were reached.
    answers: Vec<String>,
    policy: &'a mut dyn Policy,
    reward: Option<&'a mut dyn Reward>,
    exec: &'a mut dyn Executor,
}

impl Engine<'_> {
    /// One rollout: from the root, expand leaves and descend by UCT until every child of the
    /// current node is closed.
    fn simulate(&mut self) -> Result<(), Stop> {
        let mut node = 0;
        loop {
            if self.nodes[node].children.is_empty() {
                self.expand(node)?;
            }
            match self.select(node) {
                Some(c) => node = c,
                None => {
                    self.close(node);
                    return Ok(());
                }
            }
        }
    }

    /// The open child with the highest UCT; ties (all unvisited ones) broken by the seeded RNG.
    fn select(&mut self, node: usize) -> Option<usize> {
        let parent_visits = self.nodes[node].visits;
        let mut best: Vec<usize> = Vec::new();
        let mut best_score = f64::NEG_INFINITY;
        for &c in &self.nodes[node].children {
            let n = &self.nodes[c];
            if n.closed {
                continue;
            }
            let score = uct(n.value_sum, n.visits, parent_visits, self.s.c_uct);
            if score > best_score {
                best_score = score;
                best.clear();
            }
            if score == best_score {
                best.push(c);
            }
        }
        match best.len() {
            0 => None,
            1 => Some(best[0]),
            n => Some(best[self.rng.below(n)]),
        }
    }

    fn budget(&self) -> Result<(), Stop> {
        match self.s.max_calls_per_search {
            Some(cap) if self.stats.calls() >= u64::from(cap) => Err(Stop::Cap),
            _ => Ok(()),
        }
    }

    /// Asks the policy for candidates of `node`, adds them (running their code), then scores
    /// the live ones and back-propagates the terminal ones.
    fn expand(&mut self, node: usize) -> Result<(), Stop> {
        self.budget()?;
        let prefix = self.path_steps(node);
        let call_seed = splitmix(self.seed ^ splitmix(self.stats.calls()));
        let req = Expand {
            input: self.input,
            prefix: &prefix,
            n: self.s.num_candidates,
            seed: call_seed,
        };
        self.stats.policy_calls += 1;
        let proposal = self.policy.expand(&req).map_err(Stop::Failed)?;
        self.stats.tokens = match (self.stats.tokens, proposal.tokens) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        let new: Vec<usize> = proposal
            .steps
            .into_iter()
            .take(self.s.num_candidates as usize)
            .map(|text| self.add_child(node, text))
            .collect();
        for c in new {
            self.score_new(c)?;
        }
        Ok(())
    }

    /// Creates a child, running its cumulative code; failing code makes it dead.
    fn add_child(&mut self, parent: usize, text: String) -> usize {
        let id = self.nodes.len();
        let depth = self.nodes[parent].depth + 1;
        let step = parse_step(&text);
        let mut stdout = None;
        let state = if text.trim().is_empty() {
            NodeState::Dead {
                reason: "empty step".into(),
            }
        } else if let Some(answer) = step.answer {
            NodeState::Answer { answer }
        } else {
            let mut state = if depth >= self.s.max_depth {
                NodeState::DepthLimit
            } else {
                NodeState::Step
            };
            if !step.code.is_empty() {
                let code = self.path_code(parent) + &step.code;
                self.stats.code_executions += 1;
                match self.exec.run(&code) {
                    Exec::Ok { stdout: out } => stdout = Some(out),
                    Exec::Failed { stderr } => state = NodeState::Dead { reason: stderr },
                    Exec::TimedOut => {
                        state = NodeState::Dead {
                            reason: "timed out".into(),
                        }
                    }
                }
            }
            state
        };
        let dead = matches!(state, NodeState::Dead { .. });
        self.stats.dead_steps += u64::from(dead);
        self.stats.steps += 1;
        self.nodes.push(Node {
            id,
            parent: Some(parent),
            depth,
            step: text,
            state,
            reward: None,
            reward_unparseable: None,
            stdout,
            visits: 0,
            value_sum: 0.0,
            children: Vec::new(),
            closed: dead,
        });
        self.nodes[parent].children.push(id);
        id
    }

    /// Scores a new node: a live step starts at N = 1, Q = its reward (as in rStar-Math); an
    /// answer or depth-limit step back-propagates its terminal value at once and closes.
    fn score_new(&mut self, id: usize) -> Result<(), Stop> {
        let state = self.nodes[id].state.clone();
        if matches!(state, NodeState::Dead { .. }) {
            return Ok(());
        }
        if !matches!(state, NodeState::DepthLimit) {
            self.reward_of(id)?;
        }
        match state {
            NodeState::Step => {
                if let Some(r) = self.nodes[id].reward {
                    self.nodes[id].visits = 1;
                    self.nodes[id].value_sum = r;
                }
            }
            NodeState::Answer { answer } => {
                let value = self.terminal_value(id, &answer);
                match value {
                    Some(v) => self.backpropagate(id, v),
                    None => self.stats.unvalued_terminals += 1,
                }
                self.close(id);
            }
            _ => {
                self.backpropagate(id, 0.0);
                self.close(id);
            }
        }
        Ok(())
    }

    fn reward_of(&mut self, id: usize) -> Result<(), Stop> {
        if self.reward.is_none() {
            return Ok(());
        }
        self.budget()?;
        let steps = self.path_steps(id);
        self.stats.reward_calls += 1;
        let reward = self.reward.as_mut().expect("checked above");
        match reward.score(self.input, &steps).map_err(Stop::Failed)? {
            Score::Value(v) if v.is_finite() => self.nodes[id].reward = Some(v.clamp(0.0, 1.0)),
            Score::Value(v) => {
                self.stats.reward_parse_failures += 1;
                self.nodes[id].reward_unparseable = Some(format!("not a number: {v}"));
            }
            Score::Unparseable(reply) => {
                self.stats.reward_parse_failures += 1;
                self.nodes[id].reward_unparseable = Some(reply);
            }
        }
        Ok(())
    }

    /// The value an answer step propagates; None when it needs a score the reward model did
    /// not give (never a silent 0).
    fn terminal_value(&mut self, id: usize, answer: &str) -> Option<f64> {
        let prm = self.nodes[id].reward;
        let key = normalise(answer);
        let agreement = || {
            let same = self.answers.iter().filter(|a| **a == key).count() + 1;
            same as f64 / (self.answers.len() + 1) as f64
        };
        let value = match self.s.terminal_reward {
            TerminalReward::Prm => prm,
            TerminalReward::Agreement => Some(agreement()),
            TerminalReward::Mix => prm.map(|p| (p + agreement()) / 2.0),
        };
        if value.is_some() {
            self.answers.push(key);
        }
        value
    }

    /// Adds the value to Q and 1 to N of the node and each ancestor.
    fn backpropagate(&mut self, id: usize, value: f64) {
        let mut at = Some(id);
        while let Some(i) = at {
            self.nodes[i].visits += 1;
            self.nodes[i].value_sum += value;
            at = self.nodes[i].parent;
        }
    }

    /// Closes a node, and each ancestor whose children are then all closed.
    fn close(&mut self, id: usize) {
        let mut at = Some(id);
        while let Some(i) = at {
            let n = &self.nodes[i];
            if i != id && !n.children.iter().all(|&c| self.nodes[c].closed) {
                return;
            }
            self.nodes[i].closed = true;
            at = self.nodes[i].parent;
        }
    }

    /// The steps from the root to `id`, oldest first.
    fn path_steps(&self, id: usize) -> Vec<String> {
        let mut steps = Vec::new();
        let mut at = Some(id);
        while let Some(i) = at.filter(|&i| i != 0) {
            steps.push(self.nodes[i].step.clone());
            at = self.nodes[i].parent;
        }
        steps.reverse();
        steps
    }

    fn path_code(&self, id: usize) -> String {
        self.path_steps(id)
            .iter()
            .map(|s| parse_step(s).code)
            .collect()
    }

    fn finish(self) -> SearchOutcome {
        let chosen = choose(&self.nodes, self.s.answer_select);
        let answer = chosen.and_then(|i| match &self.nodes[i].state {
            NodeState::Answer { answer } => Some(answer.clone()),
            _ => None,
        });
        SearchOutcome {
            seed: self.seed,
            answer,
            answer_node: chosen,
            path: chosen.map(|i| self.path_steps(i)).unwrap_or_default(),
            stats: self.stats,
            tree: Tree { nodes: self.nodes },
        }
    }
}

/// The answer step `answer_select` picks; ties go to the node reached first.
fn choose(nodes: &[Node], how: AnswerSelect) -> Option<usize> {
    let answers = || {
        nodes.iter().filter_map(|n| match &n.state {
            NodeState::Answer { answer } => Some((n, normalise(answer))),
            _ => None,
        })
    };
    match how {
        AnswerSelect::BestValue => answers()
            .filter(|(n, _)| n.visits > 0)
            .fold(None::<&Node>, |best, (n, _)| match best {
                Some(b) if b.value_sum / b.visits as f64 >= n.value_sum / n.visits as f64 => {
                    Some(b)
                }
                _ => Some(n),
            })
            .map(|n| n.id),
        AnswerSelect::Majority => {
            let all: Vec<(&Node, String)> = answers().collect();
            let count = |k: &str| all.iter().filter(|(_, a)| a == k).count();
            all.iter()
                .fold(None::<(&Node, usize)>, |best, (n, a)| {
                    let c = count(a);
                    match best {
                        Some((b, bc)) if bc >= c => Some((b, bc)),
                        _ => Some((n, c)),
                    }
                })
                .map(|(n, _)| n.id)
        }
        AnswerSelect::MostVisited => {
            let mut at = 0;
            loop {
                let next = nodes[at]
                    .children
                    .iter()
                    .map(|&c| &nodes[c])
                    .filter(|n| n.visits > 0)
                    .fold(None::<&Node>, |best, n| match best {
                        Some(b) if b.visits >= n.visits => Some(b),
                        _ => Some(n),
                    });
                match next {
                    Some(n) => at = n.id,
                    None => break,
                }
            }
            matches!(nodes[at].state, NodeState::Answer { .. }).then_some(at)
        }
    }
}

/// Answers compare without whitespace.
fn normalise(answer: &str) -> String {
    answer.chars().filter(|c| !c.is_whitespace()).collect()
}

/// SplitMix64: request seeds spread from the search seed and the call number.
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests;
