//! Scripted policy, reward and executor: exact counts, determinism, UCT, dead steps, the cap,
//! parse failures, answer selection, and no gold in the search.

use super::*;
use crate::dataset::Problem;
use crate::search::Proposal;
use std::collections::BTreeMap;

/// Depth 0 and 1: two code steps; depth 2: answer steps `\boxed{7}` and `\boxed{8}`.
/// `fail` marks code the executor rejects.
struct ScriptPolicy {
    calls: Vec<(Vec<String>, u64, String)>,
    first: Vec<&'static str>,
}

impl ScriptPolicy {
    fn new() -> Self {
        ScriptPolicy {
            calls: Vec::new(),
            first: vec!["# a\nx = 1\n<end_of_step>", "# b\ny = 2\n<end_of_step>"],
        }
    }
}

impl Policy for ScriptPolicy {
    fn expand(&mut self, req: &Expand) -> Result<Proposal, CallFailed> {
        self.calls
            .push((req.prefix.to_vec(), req.seed, format!("{:?}", req.input)));
        let d = req.prefix.len();
        let steps: Vec<String> = match d {
            0 => self.first.iter().map(|s| s.to_string()).collect(),
            1 => (0..2)
                .map(|i| format!("z{d}{i} = {i}\n<end_of_step>"))
                .collect(),
            _ => ["7", "8"]
                .iter()
                .map(|a| format!("print(z)\n<end_of_code>\n<answer>\\boxed{{{a}}}<end_of_answer>"))
                .collect(),
        };
        Ok(Proposal {
            steps,
            tokens: Some(10),
        })
    }
}

/// Steps score 0.5; answer 7 scores 1.0, answer 8 `eight` (None: unparseable).
struct ScriptReward {
    calls: u64,
    eight: Option<f64>,
}

impl Reward for ScriptReward {
    fn score(&mut self, _: &SearchInput, steps: &[String]) -> Result<Score, CallFailed> {
        self.calls += 1;
        let last = steps.last().expect("a node has a step");
        Ok(if last.contains("boxed{7}") {
            Score::Value(1.0)
        } else if last.contains("boxed{8}") {
            self.eight.map_or(
                Score::Unparseable("I think it is fine".into()),
                Score::Value,
            )
        } else {
            Score::Value(0.5)
        })
    }
}

struct ScriptExec(u64);

impl Executor for ScriptExec {
    fn run(&mut self, code: &str) -> Exec {
        self.0 += 1;
        if code.contains("FAIL") {
            Exec::Failed {
                stderr: "NameError: FAIL".into(),
            }
        } else if code.contains("LOOP") {
            Exec::TimedOut
        } else {
            Exec::Ok {
                stdout: String::new(),
            }
        }
    }
}

fn settings(sims: u32) -> SearchSettings {
    SearchSettings {
        num_simulations: sims,
        max_depth: 3,
        num_candidates: 2,
        ..SearchSettings::default()
    }
}

fn input() -> SearchInput {
    SearchInput {
        problem_id: "p1".into(),
        question: "What is 3 + 4?".into(),
    }
}

fn run(s: &SearchSettings, seed: u64, p: &mut ScriptPolicy) -> SearchOutcome {
    let mut r = ScriptReward {
        calls: 0,
        eight: Some(0.2),
    };
    search(&input(), s, seed, p, Some(&mut r), &mut ScriptExec(0))
}

#[test]
fn uct_is_rstars_formula() {
    // Q/N + c·sqrt(ln N_parent / N), by hand: 1.7/3 + 2·sqrt(ln 2 / 3) = 1.52802…
    assert!((uct(1.7, 3, 2, 2.0) - 1.528_018).abs() < 1e-6);
    assert!((uct(0.5, 1, 2, 2.0) - 2.165_109).abs() < 1e-6);
    assert_eq!(uct(0.5, 1, 1, 2.0), 0.5);
    assert_eq!(uct(0.0, 0, 9, 2.0), f64::INFINITY);
}

#[test]
fn two_simulations_make_exact_calls_and_uct_picks_the_unexplored_branch() {
    let mut p = ScriptPolicy::new();
    let out = run(&settings(2), 7, &mut p);
    let st = &out.stats;
    // Sim 1: root, A, A's child (3 policy calls, 2+2+2 rewards); sim 2 the same under B.
    assert_eq!(
        (st.simulations, st.policy_calls, st.reward_calls),
        (2, 5, 10)
    );
    assert_eq!(st.code_executions, 6);
    assert_eq!(st.tokens, Some(50));
    assert_eq!(
        (st.dead_steps, st.reward_parse_failures, st.cap_hit),
        (0, 0, false)
    );
    // After sim 1, A has N=3, Q=1.7 and B N=1, Q=0.5 under a root with N=2: UCT gives A 1.528
    // and B 2.165, so the fourth policy call continues B, not A (the greedy choice).
    let a = p.calls[1].0[0].clone();
    assert_eq!(p.calls[3].0.len(), 1);
    assert_ne!(p.calls[3].0[0], a);
    assert_eq!(out.answer.as_deref(), Some("7"));
    assert_eq!(out.path.len(), 3);
}

#[test]
fn the_same_seed_gives_the_same_tree_and_ties_follow_the_seed() {
    let s = settings(3);
    let one = serde_json::to_string(&run(&s, 11, &mut ScriptPolicy::new())).unwrap();
    let two = serde_json::to_string(&run(&s, 11, &mut ScriptPolicy::new())).unwrap();
    assert_eq!(one, two);
    // The first choice under the root is a tie (both children 0.5): the seed breaks it.
    let firsts: std::collections::BTreeSet<String> = (0..16)
        .map(|seed| {
            let mut p = ScriptPolicy::new();
            run(&s, seed, &mut p);
            p.calls[1].0[0].clone()
        })
        .collect();
    assert_eq!(firsts.len(), 2);
}

#[test]
fn dead_steps_are_never_expanded_or_scored() {
    let mut p = ScriptPolicy::new();
    p.first = vec!["x = FAIL\n<end_of_step>", "y = LOOP\n<end_of_step>"];
    let out = run(&settings(4), 1, &mut p);
    assert_eq!(out.stats.dead_steps, 2);
    assert_eq!(out.stats.policy_calls, 1, "only the root was expanded");
    assert_eq!(out.stats.reward_calls, 0);
    assert_eq!(out.stats.simulations, 1, "a closed root ends the search");
    assert!(out.tree.nodes[0].closed && out.answer.is_none());
    let reasons: Vec<_> = out.tree.nodes[1..]
        .iter()
        .map(|n| (n.children.len(), n.state.clone()))
        .collect();
    assert_eq!(
        reasons,
        vec![
            (
                0,
                NodeState::Dead {
                    reason: "NameError: FAIL".into()
                }
            ),
            (
                0,
                NodeState::Dead {
                    reason: "timed out".into()
                }
            )
        ]
    );
    assert_eq!(settings(4).call_budget().0, out.stats.calls());
}

#[test]
fn the_call_cap_is_respected_and_recorded() {
    let mut s = settings(32);
    s.max_calls_per_search = Some(4);
    let out = run(&s, 3, &mut ScriptPolicy::new());
    assert_eq!(out.stats.calls(), 4);
    assert!(out.stats.cap_hit);
    s.max_calls_per_search = Some(1000);
    let out = run(&s, 3, &mut ScriptPolicy::new());
    assert!(!out.stats.cap_hit);
    // Four depth-1/2 branches of two answers each: the tree is exhausted before 32 simulations.
    assert_eq!(out.stats.calls(), 7 + 14);
    assert!(out.stats.calls() <= s.call_budget().1);
}

#[test]
fn unparseable_rewards_are_counted_not_zero() {
    let mut p = ScriptPolicy::new();
    let mut r = ScriptReward {
        calls: 0,
        eight: None,
    };
    let out = search(
        &input(),
        &settings(1),
        5,
        &mut p,
        Some(&mut r),
        &mut ScriptExec(0),
    );
    assert_eq!(out.stats.reward_parse_failures, 1);
    assert_eq!(out.stats.unvalued_terminals, 1);
    let eight = out
        .tree
        .nodes
        .iter()
        .find(|n| n.step.contains("boxed{8}"))
        .unwrap();
    assert_eq!(eight.reward, None);
    assert_eq!(
        eight.reward_unparseable.as_deref(),
        Some("I think it is fine")
    );
    assert_eq!(eight.visits, 0, "nothing was back-propagated from it");
    assert_eq!(
        out.tree.nodes[0].visits, 1,
        "only the answer 7 reached the root"
    );
}

#[test]
fn agreement_needs_no_reward_model() {
    let mut s = settings(1);
    s.reward_mode = RewardMode::None;
    s.terminal_reward = TerminalReward::Agreement;
    let mut r = ScriptReward {
        calls: 0,
        eight: None,
    };
    let out = search(
        &input(),
        &s,
        5,
        &mut ScriptPolicy::new(),
        Some(&mut r),
        &mut ScriptExec(0),
    );
    assert_eq!((r.calls, out.stats.reward_calls), (0, 0));
    // 7 agrees with itself (1); 8 with one of two answers (1/2).
    let v: Vec<f64> = out
        .tree
        .nodes
        .iter()
        .filter(|n| n.step.contains("boxed"))
        .map(|n| n.value_sum)
        .collect();
    assert_eq!(v, vec![1.0, 0.5]);
    assert_eq!(s.call_budget(), (1, 3));
}

fn node(id: usize, parent: Option<usize>, state: NodeState, visits: u64, q: f64) -> Node {
    Node {
        id,
        parent,
        depth: 0,
        step: String::new(),
        state,
        reward: None,
        reward_unparseable: None,
        stdout: None,
        visits,
        value_sum: q,
        children: Vec::new(),
        closed: false,
    }
}

#[test]
fn answer_select_variants_pick_their_own_node() {
    let ans = |a: &str| NodeState::Answer { answer: a.into() };
    let mut nodes = vec![
        node(0, None, NodeState::Root, 7, 0.0),
        node(1, Some(0), NodeState::Step, 5, 0.0),
        node(2, Some(0), NodeState::Step, 2, 0.0),
        node(3, Some(1), ans("5"), 3, 0.9),
        node(4, Some(1), ans("6"), 2, 1.8),
        node(5, Some(2), ans(" 6"), 1, 0.95),
    ];
    nodes[0].children = vec![1, 2];
    nodes[1].children = vec![3, 4];
    nodes[2].children = vec![5];
    // Means 0.3, 0.9, 0.95; "6" twice; visits root → 1 (5) → 3 (3).
    assert_eq!(choose(&nodes, AnswerSelect::BestValue), Some(5));
    assert_eq!(choose(&nodes, AnswerSelect::Majority), Some(4));
    assert_eq!(choose(&nodes, AnswerSelect::MostVisited), Some(3));
}

#[test]
fn the_gold_answer_never_reaches_the_search() {
    let problem = |gold: &str| Problem {
        id: "p1".into(),
        question: "What is 3 + 4?".into(),
        answer: gold.into(),
        subset: None,
        fields: BTreeMap::new(),
    };
    let (a, b) = (problem("7"), problem("GOLD-8"));
    let (ia, ib) = (SearchInput::from_problem(&a), SearchInput::from_problem(&b));
    assert_eq!(ia, ib);
    assert!(!serde_json::to_string(&ib).unwrap().contains("GOLD"));
    let r = |i: &SearchInput| {
        let mut p = ScriptPolicy::new();
        let mut rw = ScriptReward {
            calls: 0,
            eight: Some(0.2),
        };
        let out = search(
            i,
            &settings(3),
            9,
            &mut p,
            Some(&mut rw),
            &mut ScriptExec(0),
        );
        (p.calls, serde_json::to_string(&out).unwrap())
    };
    assert_eq!(r(&ia), r(&ib));
}
