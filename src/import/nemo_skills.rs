//! Reader of NeMo-Skills evaluation outputs: `<output_dir>/eval-results/<benchmark>/` holds one
//! `output-rs<seed>.jsonl` per random seed (or one greedy `output.jsonl`), each line a problem's
//! input fields plus its `generation`, `predicted_answer` and correctness (`symbolic_correct`,
//! `judgement`, `is_correct`…). Lines carry no id: line i of every seed file is problem i, as
//! NeMo-Skills' own metrics read them (files in name order, line by line); the seeds are the
//! samples. `eval-results/metrics.json` holds the stored aggregates (`pass@k`,
//! `pass@1[avg-of-k]`, `majority@k`, as percentages).

use super::files::{file_name, files_under, json_text, verdict};
use super::metric::PaperMetric;
use super::source::{
    At, ImportError, ReadOptions, Reader, Recompute, Role, Sink, SourceSample, SourceSummary,
    Stored,
};
use super::stream::{first_line, json_lines, small_json};
use crate::rundir::provenance::SourceSettings;
use regex::Regex;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// NeMo-Skills `eval-results` folders.
pub static READER: Reader = Reader {
    name: "nemo-skills",
    about: "NeMo-Skills eval-results/<benchmark>/output-rs<seed>.jsonl, one file per seed matched line by line",
    fields: &["verdict"],
    claims,
    read,
};

/// `output-rs<seed>.jsonl` (a seed) or `output.jsonl` (greedy).
static OUTPUT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^output(?:-rs(\d+))?\.jsonl$").expect("the output pattern is valid")
});

/// How a benchmark's lines mark a sample right, as NeMo-Skills' metrics classes read them; the
/// first a line has is taken (`--field verdict=NAME` names another boolean field).
#[derive(Debug, Clone, PartialEq)]
enum Mark {
    /// A boolean field, and the name `metrics.json` files its numbers under: `symbolic_correct`
    /// (math), `is_correct` (code: `passing_base_tests`).
    Field { field: String, key: String },
    /// An LLM judge's text: `Judgement: Yes` is right, anything else wrong (`judge_correct`).
    Judgement,
    /// A judge being judged (answer-judge): its `judgement` agrees with `expected_judgement`
    /// (`correct_judgements`).
    JudgeAgrees,
    /// A Lean 4 proof: `proof_status` is `completed` (`lean4_correct`).
    Proof,
}

/// The marks NeMo-Skills' metrics read, by the field a line must have, the first found taken.
const MARKS: [&str; 6] = [
    "symbolic_correct",
    "judgement",
    "is_correct",
    "proof_status",
    "correct",
    "expected_judgement",
];

impl Mark {
    /// The mark of a benchmark whose first line is `o`.
    fn of(o: &serde_json::Map<String, Value>, opts: &ReadOptions) -> Option<Mark> {
        let field = |f: &str, key: &str| Mark::Field {
            field: f.into(),
            key: key.into(),
        };
        if let Some(f) = opts.fields.get("verdict") {
            return Some(match f.as_str() {
                "judgement" => Mark::Judgement,
                _ => field(f, f),
            });
        }
        Some(match *MARKS.iter().find(|k| o.contains_key(**k))? {
            "symbolic_correct" => field("symbolic_correct", "symbolic_correct"),
            "judgement" if o.contains_key("expected_judgement") => Mark::JudgeAgrees,
            "judgement" => Mark::Judgement,
            "is_correct" => field("is_correct", "passing_base_tests"),
            "proof_status" => Mark::Proof,
            "correct" => field("correct", "correct"),
            _ => return None,
        })
    }

    /// What the line says: its verdict, and the answer majority votes count (the predicted
    /// answer; a judge's yes or no).
    fn read(
        &self,
        o: &serde_json::Map<String, Value>,
    ) -> Result<(Option<bool>, Option<String>), String> {
        let text = |k: &str| o.get(k).and_then(Value::as_str);
        let predicted = o.get("predicted_answer").and_then(json_text);
        Ok(match self {
            Mark::Field { field, .. } => match o.get(field) {
                None => (None, predicted),
                Some(x) => (
                    verdict(x).map_err(|why| format!("`{field}`: {why}"))?,
                    predicted,
                ),
            },
            Mark::Judgement => (text("judgement").map(judged), predicted),
            Mark::JudgeAgrees => {
                let said = text("judgement").and_then(judgement);
                let want = text("expected_judgement").and_then(judgement);
                let answer = said.map(|y| if y { "yes" } else { "no" }.to_string());
                (text("judgement").map(|_| said == want), answer)
            }
            Mark::Proof => (text("proof_status").map(|s| s == "completed"), predicted),
        })
    }

    /// The name `metrics.json` gives the numbers this mark makes.
    fn key(&self) -> &str {
        match self {
            Mark::Field { key, .. } => key,
            Mark::Judgement => "judge_correct",
            Mark::JudgeAgrees => "correct_judgements",
            Mark::Proof => "lean4_correct",
        }
    }

    fn label(&self) -> String {
        match self {
            Mark::Field { field, .. } => format!("`{field}`"),
            Mark::Judgement => "`judgement` (Yes/No)".into(),
            Mark::JudgeAgrees => "`judgement` agreeing with `expected_judgement`".into(),
            Mark::Proof => "`proof_status` = completed".into(),
        }
    }
}

fn claims(path: &Path) -> bool {
    OUTPUT.is_match(&file_name(path))
        && first_line(path).is_some_and(|v| {
            // A generation, its answer, or a mark the metrics read (code, Lean, a judge).
            let has = |k: &str| v.get(k).is_some();
            has("generation") || has("predicted_answer") || MARKS.iter().any(|k| has(k))
        })
}

/// One benchmark folder's files: seeds in name order (NeMo-Skills' order), or the greedy one.
struct Benchmark {
    name: String,
    model: String,
    files: Vec<PathBuf>,
    metrics: Option<PathBuf>,
}

/// The benchmark folders under `paths`, each with its output files.
fn benchmarks(paths: &[PathBuf], opts: &ReadOptions) -> Result<Vec<Benchmark>, ImportError> {
    let found = files_under(paths, |p| OUTPUT.is_match(&file_name(p)))?;
    let mut by_dir: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
    for f in found {
        let dir = f.parent().map(Path::to_path_buf).unwrap_or_default();
        by_dir.entry(dir).or_default().push(f);
    }
    let mut out = Vec::new();
    for (dir, mut files) in by_dir {
        files.sort_by_key(|f| file_name(f));
        let greedy = files.iter().any(|f| file_name(f) == "output.jsonl");
        if greedy && files.len() > 1 {
            return Err(ImportError::Input(format!(
                "nemo-skills: {} holds output.jsonl (greedy) and output-rs*.jsonl (sampled): two evaluations; give the files of one",
                dir.display()
            )));
        }
        let above = dir.parent();
        let results = above.filter(|a| file_name(a) == "eval-results");
        let model = (results.and_then(Path::parent).map(file_name))
            .filter(|m| !m.is_empty())
            .or(opts.model.clone())
            .unwrap_or_else(|| "nemo-skills".into());
        let metrics = [
            dir.join("metrics.json"),
            above.map(|a| a.join("metrics.json")).unwrap_or_default(),
        ]
        .into_iter()
        .find(|m| m.is_file());
        out.push(Benchmark {
            name: file_name(&dir),
            model,
            files,
            metrics,
        });
    }
    Ok(out)
}

fn read(
    paths: &[PathBuf],
    opts: &ReadOptions,
    sink: &mut dyn Sink,
) -> Result<SourceSummary, ImportError> {
    let found = benchmarks(paths, opts)?;
    if found.is_empty() {
        return Err(ImportError::Input(format!(
            "nemo-skills: no output-rs<seed>.jsonl or output.jsonl under {}",
            (paths.iter().map(|p| p.display().to_string()))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let mut summary = SourceSummary {
        layout: "NeMo-Skills eval-results/<benchmark>/output-rs<seed>.jsonl (files in name order, matched line by line)".into(),
        ..SourceSummary::default()
    };
    let mut fields = Vec::new();
    for b in &found {
        if !sink.wants(&b.files[0], Some(&b.model), Some(&b.name)) {
            continue;
        }
        if let Some(why) = nothing_to_grade(b, opts) {
            // Its dataset gets no run: a note of the import as a whole.
            summary.note(&b.name, why);
            continue;
        }
        let mut seeds = Seeds::default();
        for (i, path) in b.files.iter().enumerate() {
            seeds.file(sink, b, i as u32, path, opts)?;
        }
        let mark = seeds.mark.as_ref().map_or("none".into(), Mark::label);
        fields.push(format!("{}: {mark}", b.name));
        if seeds.verdict_only > 0 {
            summary.note(&b.name, format!(
                "{} lines hold no expected_answer: NeMo-Skills' verdict ({mark}) is their verdict (kept as the answer 1 or 0 against the gold 1); --dataset gives gpassk the gold to re-grade the predicted answers",
                seeds.verdict_only
            ));
        }
        settings(b, &mut summary);
        if let Some(m) = &b.metrics {
            let metrics = sink.open(m, Role::Side)?;
            sink.belongs(metrics, &b.name);
            aggregates(b, &small_json(m)?, &seeds, &mut summary);
        }
    }
    summary.verdicts = format!(
        "per sample: each line's correctness field ({}): NeMo-Skills' own verdict (a `judgement` reads as its Yes/No)",
        fields.join("; ")
    );
    Ok(summary)
}

/// Why benchmark `b` is left out, if it is: its lines hold neither a gold answer nor a
/// correctness mark (instruction following, arena judgements…), so nothing can say a sample is
/// right.
fn nothing_to_grade(b: &Benchmark, opts: &ReadOptions) -> Option<String> {
    let first = first_line(&b.files[0])?;
    let o = first.as_object()?;
    let gold = o.get("expected_answer").is_some_and(|g| !g.is_null());
    if gold || opts.dataset_gold || Mark::of(o, opts).is_some() {
        return None;
    }
    Some(format!(
        "nemo-skills: {} left out: its lines hold no expected_answer and none of the correctness fields NeMo-Skills' metrics read ({}); --field verdict=NAME names one, --dataset gives the gold",
        b.files[0].parent().unwrap_or(Path::new("")).display(),
        MARKS[..5].join(", ")
    ))
}

fn settings(b: &Benchmark, summary: &mut SourceSummary) {
    let seeds: Vec<u64> = (b.files.iter())
        .filter_map(|f| {
            OUTPUT
                .captures(&file_name(f))?
                .get(1)?
                .as_str()
                .parse()
                .ok()
        })
        .collect();
    let s = SourceSettings {
        nominal_n: u32::try_from(b.files.len()).ok(),
        recorded: serde_json::json!({ "benchmark": b.name, "seeds": seeds }),
        ..SourceSettings::default()
    };
    summary.models.entry(b.model.clone()).or_insert(s);
}

/// The seed files of one benchmark, read one after another.
#[derive(Default)]
struct Seeds {
    /// The first file's problems, line by line: a hash of each problem's text.
    problems: Vec<u64>,
    /// How the lines mark a sample right (the first line decides).
    mark: Option<Mark>,
    decided: bool,
    /// Per problem: (predicted answer, verdict) of each seed, for `majority@k`.
    answers: Vec<Vec<(Option<String>, bool)>>,
    /// Per problem: its `subset_for_metrics`.
    subsets: Vec<Option<String>>,
    /// Lines with no gold answer whose source verdict is kept as the answer.
    verdict_only: u64,
}

impl Seeds {
    fn file(
        &mut self,
        sink: &mut dyn Sink,
        b: &Benchmark,
        seed: u32,
        path: &Path,
        opts: &ReadOptions,
    ) -> Result<(), ImportError> {
        let file = sink.open(path, Role::Samples)?;
        let mut i = 0usize;
        json_lines(sink, file, |sink, line, v| {
            let at = At::Line(line);
            let p = i;
            i += 1;
            match self.line(b, (seed, p), &v, opts) {
                Ok(mut s) => {
                    s.file = file;
                    s.at = at;
                    sink.sample(s)
                }
                Err(m) => sink.bad(file, at, m),
            }
        })?;
        if seed > 0 && i != self.problems.len() {
            return Err(ImportError::bad(
                path,
                At::File,
                format!(
                    "{i} lines, where {} holds {}: seed files are matched line by line",
                    file_name(&b.files[0]),
                    self.problems.len()
                ),
            ));
        }
        Ok(())
    }

    /// Line `p` of seed file `seed` as a sample; Err says why it is malformed.
    fn line(
        &mut self,
        b: &Benchmark,
        (seed, p): (u32, usize),
        v: &Value,
        opts: &ReadOptions,
    ) -> Result<SourceSample, String> {
        let o = v.as_object().ok_or("not a JSON object")?;
        let question = ["problem", "question"]
            .iter()
            .find_map(|k| o.get(*k).and_then(json_text));
        let gold = o.get("expected_answer").and_then(json_text);
        let h = hash_of(&(&question, &gold));
        match (seed, self.problems.get(p)) {
            (0, _) => self.problems.push(h),
            (_, Some(&first)) if first == h => {}
            (_, Some(_)) => {
                return Err(format!(
                    "not the problem of line {} of {}: seed files are matched line by line",
                    p + 1,
                    file_name(&b.files[0])
                ))
            }
            (_, None) => {
                return Err(format!(
                    "past the {} lines of {}",
                    self.problems.len(),
                    file_name(&b.files[0])
                ))
            }
        }
        if !self.decided {
            self.mark = Mark::of(o, opts);
            self.decided = true;
        }
        let (verdict, answer) = match &self.mark {
            Some(m) => m.read(o)?,
            None => (None, o.get("predicted_answer").and_then(json_text)),
        };
        if self.answers.len() <= p {
            self.answers.resize_with(p + 1, Vec::new);
            self.subsets.resize(p + 1, None);
        }
        self.answers[p].push((answer.clone(), verdict.unwrap_or(false)));
        let subset = o.get("subset_for_metrics").and_then(json_text);
        self.subsets[p].clone_from(&subset);
        let response = o.get("generation").and_then(json_text);
        // No gold (a benchmark graded by tests, a judge, a prover, or lines stripped of it):
        // nothing gpassk can re-grade, so NeMo-Skills' verdict is graded, as a τ-bench reward is.
        if gold.is_none() && !opts.dataset_gold && self.mark.is_some() {
            self.verdict_only += 1;
            return Ok(SourceSample {
                model: b.model.clone(),
                dataset: b.name.clone(),
                problem_id: p.to_string(),
                question,
                gold: Some("1".into()),
                subset,
                repeat: Some(seed),
                answer: verdict.map(|v| if v { "1" } else { "0" }.into()),
                extracted: answer,
                verdict,
                ..SourceSample::default()
            });
        }
        Ok(SourceSample {
            model: b.model.clone(),
            dataset: b.name.clone(),
            problem_id: p.to_string(),
            question,
            gold,
            subset,
            repeat: Some(seed),
            answer: response.is_none().then(|| answer.clone()).flatten(),
            response,
            extracted: answer,
            verdict,
            ..SourceSample::default()
        })
    }
}

/// NeMo-Skills' reading of an LLM judge's text: `Judgement: Yes` or `No`; anything else is no.
fn judged(text: &str) -> bool {
    judgement(text) == Some(true)
}

/// `Judgement: Yes` (true) or `No` (false) after the last `Judgement:`; None otherwise.
fn judgement(text: &str) -> Option<bool> {
    let (_, v) = text.rsplit_once("Judgement:")?;
    let v = v.trim().to_ascii_lowercase();
    match (v.starts_with("yes"), v.starts_with("no")) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    }
}

fn hash_of(v: &impl Hash) -> u64 {
    let mut h = DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}

/// `metrics.json`'s numbers of this benchmark (and of each of its subsets, filed as
/// `<benchmark>-<subset>`) for the mark read: `pass@k` and `pass@1[avg-of-k]` from the samples'
/// verdicts, `majority@k` from the answers.
fn aggregates(b: &Benchmark, metrics: &Value, seeds: &Seeds, summary: &mut SourceSummary) {
    let Some(key) = seeds.mark.as_ref().map(Mark::key) else {
        return;
    };
    let mut subsets: Vec<&String> = seeds.subsets.iter().flatten().collect();
    subsets.sort();
    subsets.dedup();
    let scopes = std::iter::once((b.name.clone(), None)).chain(
        subsets
            .into_iter()
            .map(|s| (format!("{}-{s}", b.name), Some(s.clone()))),
    );
    for (entry, subset) in scopes {
        let Some(modes) = metrics.get(&entry).and_then(Value::as_object) else {
            continue;
        };
        for (mode, values) in modes {
            let Some(value) = values.get(key).and_then(Value::as_f64) else {
                continue;
            };
            let recompute = match (PaperMetric::parse(mode), mode.strip_prefix("majority@")) {
                (Some(metric), _) => Recompute::Verdicts {
                    metric,
                    scale: 100.0,
                    subset: subset.clone(),
                    files: Vec::new(),
                },
                (None, Some(k)) => majority(seeds, k.parse().unwrap_or(0), subset.as_deref()),
                (None, None) => continue,
            };
            let within = subset
                .as_ref()
                .map_or(String::new(), |_| format!("{entry} "));
            summary.aggregates.push(Stored {
                model: b.model.clone(),
                dataset: b.name.clone(),
                name: format!("{within}{mode}: {key}"),
                value,
                recompute,
            });
        }
    }
}

/// NeMo-Skills' `majority@k` (over the problems of `subset`, when given): per problem, among
/// the first k seeds' answers (none left out), the most common (answer, verdict) pairs; the
/// problem scores the mean verdict of those tied.
fn majority(seeds: &Seeds, k: usize, subset: Option<&str>) -> Recompute {
    let chosen: Vec<&Vec<(Option<String>, bool)>> = (seeds.answers.iter().zip(&seeds.subsets))
        .filter(|(_, s)| subset.is_none() || s.as_deref() == subset)
        .map(|(a, _)| a)
        .collect();
    if k < 2 || chosen.iter().any(|a| a.len() < k) {
        return Recompute::Done {
            value: None,
            basis: format!("majority@{k}: a problem has fewer than k samples"),
        };
    }
    let mut sum = 0.0;
    for answers in &chosen {
        let mut counts: HashMap<(&str, bool), u32> = HashMap::new();
        for (a, v) in answers.iter().take(k) {
            if let Some(a) = a {
                *counts.entry((a.as_str(), *v)).or_default() += 1;
            }
        }
        let top = counts.values().copied().max().unwrap_or(0);
        let tied: Vec<bool> = (counts.iter())
            .filter(|(_, &c)| c == top)
            .map(|((_, v), _)| *v)
            .collect();
        if !tied.is_empty() {
            sum += tied.iter().filter(|&&v| v).count() as f64 / tied.len() as f64;
        }
    }
    let n = chosen.len();
    Recompute::Done {
        value: (n > 0).then(|| 100.0 * sum / n as f64),
        basis: format!(
            "100 × mean over {n} problems of the majority vote of the first {k} seeds' answers (ties: the mean verdict of the tied answers), as NeMo-Skills counts it"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judgements_read_as_nemo_skills_reads_them() {
        assert!(judged("reasoning…\nJudgement: Yes"));
        assert!(!judged("Judgement: No"));
        assert!(!judged("no verdict here"));
    }
}

#[cfg(test)]
mod reading {
    use super::super::source::Note;
    use super::super::testing::{checks, fixture, read_into, Collect};
    use super::*;

    const BENCH: &str = "nemo-skills/stub-math/eval-results/gpk_arith";

    fn run(paths: &[PathBuf]) -> (Collect, Result<SourceSummary, ImportError>) {
        read_into("nemo-skills", paths, &ReadOptions::default(), false)
    }

    /// A copy of the seed files with `edit` applied to seed file `seed`'s lines.
    fn edited(seed: usize, edit: impl FnOnce(&mut Vec<String>)) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let to = dir.path().join("m/eval-results/gpk_arith");
        std::fs::create_dir_all(&to).unwrap();
        let mut edit = Some(edit);
        for i in 0..6 {
            let name = format!("output-rs{i}.jsonl");
            let text = std::fs::read_to_string(fixture(&format!("{BENCH}/{name}"))).unwrap();
            let mut lines: Vec<String> = text.lines().map(String::from).collect();
            if let Some(edit) = (i == seed).then(|| edit.take()).flatten() {
                edit(&mut lines);
                std::fs::write(to.join(&name), lines.join("\n") + "\n").unwrap();
                continue;
            }
            std::fs::write(to.join(&name), text).unwrap();
        }
        dir
    }

    #[test]
    fn seed_files_are_the_samples_of_each_line_and_every_stored_metric_recomputes() {
        let (sink, out) = run(&[fixture("nemo-skills/stub-math")]);
        let summary = out.unwrap();
        let got: Vec<(u32, Option<u32>)> = sink.counts().into_values().collect();
        assert_eq!(got, [6, 0, 3, 5, 1, 4, 2, 6].map(|c| (6, Some(c))));
        assert_eq!(sink.datasets(), ["gpk_arith"]);
        assert!(sink.samples.iter().all(|s| s.model == "stub-math"));
        // The seed is the sample: output-rs2.jsonl gives sample 2 of every problem.
        let s = (sink.samples.iter())
            .find(|s| s.problem_id == "1" && s.repeat == Some(2))
            .unwrap();
        assert!(sink.files[s.file].ends_with("output-rs2.jsonl"));
        assert_eq!(s.extracted.as_deref(), Some("7/12"));
        let done = checks(&sink, &summary);
        assert_eq!(done.len(), 16, "{done:?}");
        assert!(done.iter().all(|a| a.3), "{done:?}");
        assert_eq!(summary.models["stub-math"].nominal_n, Some(6));
    }

    #[test]
    fn a_seed_file_out_of_step_is_named_by_file_and_line() {
        let dir = edited(2, |l| l.swap(3, 4));
        let (_, out) = run(&[dir.path().to_path_buf()]);
        let e = out.unwrap_err().to_string();
        assert!(
            e.contains("output-rs2.jsonl:4") && e.contains("line by line"),
            "{e}"
        );
        let dir = edited(5, |l| {
            l.pop();
        });
        let (_, out) = run(&[dir.path().to_path_buf()]);
        let e = out.unwrap_err().to_string();
        assert!(
            e.contains("output-rs5.jsonl") && e.contains("7 lines"),
            "{e}"
        );
        let dir = edited(1, |l| {
            l[0] = l[0].replace("\"symbolic_correct\": true", "\"symbolic_correct\": 7.5")
        });
        let (_, out) = run(&[dir.path().to_path_buf()]);
        let e = out.unwrap_err().to_string();
        assert!(e.contains("output-rs1.jsonl:1") && e.contains("7.5"), "{e}");
    }

    /// The shape of NVIDIA/NeMo-Skills' own `tests/data/eval_outputs` (0b012df8): lines without
    /// gold or generation, code, Lean and judge benchmarks, per-subset metrics.
    const PUBLISHED: &str = "nemo-skills/published-shape";

    #[test]
    fn published_benchmarks_keep_the_source_verdict_and_every_stored_metric_recomputes() {
        let (sink, out) = run(&[fixture(PUBLISHED)]);
        let summary = out.unwrap();
        assert_eq!(
            sink.datasets(),
            ["answer-judge", "code", "lean4", "math_subsets"]
        );
        let mut per: BTreeMap<(&str, &str), u32> = BTreeMap::new();
        for s in &sink.samples {
            *per.entry((&s.dataset, &s.problem_id)).or_default() += 1;
            // No gold to re-grade against: NeMo-Skills' verdict is the answer, against 1.
            assert_eq!(s.gold.as_deref(), Some("1"), "{s:?}");
            let said = s.verdict.map(|v| if v { "1" } else { "0" });
            assert_eq!(s.answer.as_deref(), said, "{s:?}");
        }
        assert_eq!(per.len(), 9);
        assert!(per.values().all(|&n| n == 2), "{per:?}");
        let done = checks(&sink, &summary);
        assert_eq!(done.len(), 22, "{done:?}");
        assert!(done.iter().all(|a| a.3), "{done:?}");
        assert!(done
            .iter()
            .any(|a| a.0 == "math_subsets-b majority@2: symbolic_correct"));
        assert!(done.iter().any(|a| a.0 == "pass@2: correct_judgements"));
        // ifeval's lines say nothing gpassk can grade: left out, and said of ifeval (which gets
        // no run: the writer keeps it in every run).
        let ifeval = |n: &Note| n.dataset.as_deref() == Some("ifeval");
        assert!(
            (summary.notes.iter()).any(|n| n.text.contains("ifeval left out") && ifeval(n)),
            "{:?}",
            summary.notes
        );
        assert!(summary
            .verdicts
            .contains("lean4: `proof_status` = completed"));
    }

    #[test]
    fn with_a_dataset_the_predicted_answers_are_kept_to_regrade() {
        let opts = ReadOptions {
            dataset_gold: true,
            task: Some("math_subsets".into()),
            ..ReadOptions::default()
        };
        let (sink, out) = read_into("nemo-skills", &[fixture(PUBLISHED)], &opts, false);
        out.unwrap();
        let s = &sink.samples[1];
        assert_eq!((s.gold.as_deref(), s.answer.as_deref()), (None, Some("2")));
        assert_eq!(s.verdict, Some(false));
    }

    #[test]
    fn a_folder_of_code_or_lean_seed_files_alone_is_told_apart() {
        for bench in ["code", "lean4", "answer-judge"] {
            let dir = fixture(&format!("{PUBLISHED}/eval-results/{bench}"));
            let got = crate::import::detect(&[dir]).map(|f| f.name());
            assert_eq!(got.ok(), Some("nemo-skills"), "{bench}");
        }
    }

    #[test]
    fn greedy_and_sampled_outputs_together_are_refused() {
        let dir = edited(9, |_| {});
        let bench = dir.path().join("m/eval-results/gpk_arith");
        std::fs::copy(bench.join("output-rs0.jsonl"), bench.join("output.jsonl")).unwrap();
        let (_, out) = run(&[dir.path().to_path_buf()]);
        assert!(out.unwrap_err().to_string().contains("two evaluations"));
    }
}
