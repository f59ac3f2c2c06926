//! Tests of the loader on every shipped dataset and on malformed files.

use std::collections::{BTreeSet, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::load::{after_hashes, integer_float, load_entry, load_path, strip_dollars};
use super::registry::{lookup, REGISTRY};
use super::*;

fn shipped() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets")
}

fn shipped_dataset(name: &str) -> Dataset {
    load_entry(lookup(name).unwrap(), &shipped()).unwrap()
}

// ---------- shipped datasets ----------

#[test]
fn shipped_counts_match_provenance() {
    let expected = [
        ("livemathbench_202412", 119),
        ("livemathbench_202412_hard", 21),
        ("math500", 500),
        ("math500_l5", 134),
        ("aime24", 30),
        ("amc23", 40),
        ("gsm8k", 1319),
        ("cmath", 600),
        ("arith_demo", 50),
    ];
    assert_eq!(expected.len(), REGISTRY.len());
    for (name, count) in expected {
        assert_eq!(shipped_dataset(name).problems.len(), count, "{name}");
    }
}

#[test]
fn shipped_ids_unique_and_answers_non_empty() {
    for entry in REGISTRY {
        let dataset = load_entry(entry, &shipped()).unwrap();
        let ids: HashSet<&str> = dataset.problems.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids.len(), dataset.problems.len(), "{}", entry.name);
        for problem in &dataset.problems {
            assert!(
                !problem.answer.trim().is_empty(),
                "{} {}",
                entry.name,
                problem.id
            );
            assert!(
                !problem.question.trim().is_empty(),
                "{} {}",
                entry.name,
                problem.id
            );
            assert_eq!(
                problem.answer,
                problem.answer.trim(),
                "{} {}",
                entry.name,
                problem.id
            );
        }
    }
}

#[test]
fn shipped_default_prompts_render() {
    for entry in REGISTRY {
        let dataset = load_entry(entry, &shipped()).unwrap();
        for problem in &dataset.problems {
            crate::prompt::render(&dataset.default_template, problem).unwrap();
        }
    }
}

#[test]
fn livemathbench_subsets_and_ids() {
    let dataset = shipped_dataset("livemathbench_202412");
    assert_eq!(dataset.subsets(), ["CNMO", "CCEE", "AMC", "WLPMC"]);
    let count = |s: &str| {
        dataset
            .problems
            .iter()
            .filter(|p| p.subset.as_deref() == Some(s))
            .count()
    };
    assert_eq!(
        [count("CNMO"), count("CCEE"), count("AMC"), count("WLPMC")],
        [18, 44, 46, 11]
    );
    assert_eq!(dataset.problems[0].id, "CNMO/0");
    let amc3 = dataset.problem("AMC/3").unwrap();
    assert_eq!(amc3.subset.as_deref(), Some("AMC"));
    assert_eq!(amc3.answer, "23");
    assert_eq!(dataset.files.len(), 4);
    assert!(dataset.files[0].ends_with("livemathbench_202412/CNMO_en.jsonl"));
    assert_eq!(dataset.files[3].file_name().unwrap(), "WLPMC_en.jsonl");
    assert!(dataset.problems[0].fields.contains_key("question_type"));
    assert_eq!(dataset.problems[0].fields.get("options").unwrap(), "");
}

#[test]
fn livemathbench_dollars_are_stripped() {
    let dataset = shipped_dataset("livemathbench_202412");
    assert_eq!(dataset.problem("CNMO/0").unwrap().answer, "4049");
    assert_eq!(
        dataset.problem("CNMO/1").unwrap().answer,
        "[-\\frac{1}{4}, 0) \\cup (0, 2)"
    );
    // Prose answers keep their inline math.
    let prose = dataset
        .problems
        .iter()
        .find(|p| p.answer.starts_with("For all"))
        .unwrap();
    assert_eq!(prose.answer, "For all $n$, Bob has a winning strategy.");
    let hard = shipped_dataset("livemathbench_202412_hard");
    assert_eq!(hard.problems[0].id, "0");
    assert_eq!(hard.problems[0].answer, "591");
    assert_eq!(hard.problems[0].subset, None);
}

#[test]
fn math500_uses_unique_id_subject_and_level() {
    let dataset = shipped_dataset("math500");
    let first = &dataset.problems[0];
    assert_eq!(first.id, "test/precalculus/807.json");
    assert_eq!(first.subset.as_deref(), Some("Precalculus"));
    assert_eq!(first.fields.get("level").map(String::as_str), Some("2"));
    assert_eq!(first.answer, "\\left( 3, \\frac{\\pi}{2} \\right)");
    assert_eq!(dataset.subsets().len(), 7);
    assert!(first.worked_answer().contains("\\boxed"));
}

#[test]
fn amc23_float_answers_become_integers() {
    let dataset = shipped_dataset("amc23");
    assert_eq!(dataset.problems[0].id, "0");
    assert_eq!(dataset.problems[0].answer, "27");
    assert!(dataset.problems.iter().all(|p| !p.answer.contains('.')));
    assert!(dataset.problems.iter().any(|p| p.answer == "-1"));
}

#[test]
fn aime24_keeps_file_ids() {
    let dataset = shipped_dataset("aime24");
    assert_eq!(dataset.problems[0].id, "60");
    assert_eq!(dataset.problems[0].answer, "204");
}

#[test]
fn gsm8k_answer_after_hashes() {
    let dataset = shipped_dataset("gsm8k");
    let first = &dataset.problems[0];
    assert_eq!(first.id, "0");
    assert_eq!(first.answer, "18");
    let solution = first.fields.get("solution").unwrap();
    assert!(solution.starts_with("Janet sells 16 - 3 - 4 = 9 duck eggs a day."));
    assert!(!solution.contains("<<") && !solution.contains("####"));
    assert!(first
        .worked_answer()
        .ends_with("The final answer is $\\boxed{18}$."));
    assert_eq!(dataset.problems[1318].id, "1318");
    assert!(dataset.problems.iter().all(|p| !p.answer.contains(',')));
}

#[test]
fn cmath_is_chinese_with_chinese_prompt() {
    let dataset = shipped_dataset("cmath");
    assert_eq!(dataset.language, Language::Chinese);
    assert_eq!(
        dataset.default_template,
        crate::dataset::DEFAULT_TEMPLATE_ZH
    );
    assert_eq!(dataset.problems[0].answer, "9");
    assert_eq!(dataset.problems[0].fields.get("grade").unwrap(), "1");
}

#[test]
fn sha256_of_single_file_matches_the_file() {
    use sha2::{Digest, Sha256};
    let dataset = shipped_dataset("amc23");
    let bytes = std::fs::read(shipped().join("amc23.jsonl")).unwrap();
    let digest = Sha256::digest(&bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(dataset.sha256, hex);
}

#[test]
fn sha256_of_several_files_hashes_them_in_order() {
    use sha2::{Digest, Sha256};
    let dataset = shipped_dataset("livemathbench_202412");
    let mut hasher = Sha256::new();
    for subset in ["CNMO", "CCEE", "AMC", "WLPMC"] {
        let path = shipped().join(format!("livemathbench_202412/{subset}_en.jsonl"));
        hasher.update(std::fs::read(path).unwrap());
    }
    let hex: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(dataset.sha256, hex);
    assert_eq!(dataset.sha256.len(), 64);
}

#[test]
fn load_by_name_uses_the_datasets_folder() {
    let dataset = load("amc23", None).unwrap();
    assert_eq!(dataset.name, "amc23");
    assert_eq!(dataset.problems.len(), 40);
}

#[test]
fn arith_demo_is_a_demo_set() {
    assert!(lookup("arith_demo").unwrap().demo);
    let dataset = shipped_dataset("arith_demo");
    assert!(dataset
        .problems
        .iter()
        .all(|p| p.question.starts_with("What is ")));
    assert!(dataset.problems[0]
        .worked_answer()
        .contains(&format!("\\boxed{{{}}}", dataset.problems[0].answer)));
}

// ---------- datasets folder ----------

#[test]
fn datasets_dir_prefers_env_then_cwd_then_manifest() {
    let temp = tempfile::tempdir().unwrap();
    let from_env = resolve_datasets_dir(Some("/somewhere/else".into()), temp.path());
    assert_eq!(from_env, PathBuf::from("/somewhere/else"));
    let fallback = resolve_datasets_dir(None, temp.path());
    assert_eq!(fallback, shipped());
    let empty_env = resolve_datasets_dir(Some("".into()), temp.path());
    assert_eq!(empty_env, shipped());
    std::fs::create_dir(temp.path().join("datasets")).unwrap();
    assert_eq!(
        resolve_datasets_dir(None, temp.path()),
        temp.path().join("datasets")
    );
}

// ---------- custom files ----------

fn write(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    let mut file = std::fs::File::create(&path).unwrap();
    file.write_all(bytes).unwrap();
    path
}

fn error_for(bytes: &[u8], fields: Option<&FieldMap>) -> (PathBuf, DatasetError) {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "bad.jsonl", bytes);
    let err = load_path(&path, fields).unwrap_err();
    // Keep the folder alive until the error is built; return the path for the message check.
    (path, err)
}

fn assert_names(err: &DatasetError, path: &Path, line: usize) {
    let message = err.to_string();
    let expected = format!("{}:{line}:", path.display());
    assert!(
        message.starts_with(&expected),
        "`{message}` should start with `{expected}`"
    );
}

#[test]
fn custom_file_with_field_map() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        &dir,
        "mine.jsonl",
        "{\"q\": \"1+1?\", \"a\": 2, \"topic\": \"add\", \"hint\": \"easy\"}\n\n\
         {\"q\": \"2+2?\", \"a\": \"4\", \"topic\": \"add\", \"tags\": [\"x\", \"y\"], \"deep\": {\"k\": 1}}\n"
            .as_bytes(),
    );
    let fields = FieldMap {
        id: None,
        question: "q".to_string(),
        answer: "a".to_string(),
        subset: Some("topic".to_string()),
    };
    let dataset = load_path(&path, Some(&fields)).unwrap();
    assert_eq!(dataset.problems.len(), 2);
    let first = &dataset.problems[0];
    assert_eq!(first.id, "0");
    assert_eq!(first.answer, "2");
    assert_eq!(first.subset.as_deref(), Some("add"));
    assert_eq!(first.fields.get("hint").unwrap(), "easy");
    assert!(!first.fields.contains_key("q") && !first.fields.contains_key("topic"));
    // Ids are physical 0-based line numbers: the blank line still counts.
    assert_eq!(dataset.problems[1].id, "2");
    assert_eq!(dataset.problems[1].fields.get("tags").unwrap(), "x\ny");
    assert!(!dataset.problems[1].fields.contains_key("deep"));
    assert_eq!(dataset.language, Language::English);
    assert_eq!(dataset.name, path.display().to_string());
}

#[test]
fn custom_file_default_fields_use_id_when_present() {
    let dir = tempfile::tempdir().unwrap();
    let with_ids = write(
        &dir,
        "a.jsonl",
        b"{\"id\": \"p1\", \"question\": \"q\", \"answer\": \"1\"}\r\n{\"id\": 7, \"question\": \"q\", \"answer\": \"2\"}\r\n",
    );
    let dataset = load(with_ids.to_str().unwrap(), None).unwrap();
    let ids: Vec<&str> = dataset.problems.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["p1", "7"]);
    let without = write(
        &dir,
        "b.jsonl",
        "\u{feff}{\"question\": \"q\", \"answer\": \"1\"}\n{\"question\": \"r\", \"answer\": \"2\"}"
            .as_bytes(),
    );
    let dataset = load(without.to_str().unwrap(), None).unwrap();
    let ids: Vec<&str> = dataset.problems.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["0", "1"]);
}

#[test]
fn explicit_id_field_is_required_on_every_line() {
    let input = b"{\"id\": \"a\", \"question\": \"q\", \"answer\": \"1\"}\n{\"question\": \"q\", \"answer\": \"2\"}\n";
    let (path, err) = error_for(input, Some(&FieldMap::default()));
    assert!(matches!(&err, DatasetError::MissingField { field, line: 2, .. } if field == "id"));
    assert_names(&err, &path, 2);
}

#[test]
fn invalid_json_names_file_and_line() {
    let input = b"{\"question\": \"q\", \"answer\": \"1\"}\n{\"question\": \"q\", \"answer\": }\n";
    let (path, err) = error_for(input, None);
    assert!(
        matches!(err, DatasetError::InvalidJson { line: 2, .. }),
        "{err:?}"
    );
    assert_names(&err, &path, 2);
    assert!(err.to_string().contains("invalid JSON"));
}

#[test]
fn invalid_utf8_names_file_and_line() {
    let input = b"{\"question\": \"q\", \"answer\": \"1\"}\n\n{\"question\": \"\xff\xfe\", \"answer\": \"1\"}\n";
    let (path, err) = error_for(input, None);
    assert!(
        matches!(
            err,
            DatasetError::InvalidUtf8 {
                line: 3,
                byte: 15,
                ..
            }
        ),
        "{err:?}"
    );
    assert_names(&err, &path, 3);
    assert!(err.to_string().contains("invalid UTF-8"));
}

#[test]
fn missing_field_names_file_line_and_field() {
    let input = b"{\"question\": \"q\"}\n";
    let (path, err) = error_for(input, None);
    assert!(matches!(&err, DatasetError::MissingField { field, line: 1, .. } if field == "answer"));
    assert_names(&err, &path, 1);
    assert!(err.to_string().contains("missing field `answer`"));
    let null_question = b"{\"question\": null, \"answer\": \"1\"}\n";
    let (_, err) = error_for(null_question, None);
    assert!(matches!(&err, DatasetError::MissingField { field, .. } if field == "question"));
}

#[test]
fn empty_answer_names_file_and_line() {
    let input =
        b"{\"question\": \"q\", \"answer\": \"1\"}\n{\"question\": \"q\", \"answer\": \"  \"}\n";
    let (path, err) = error_for(input, None);
    assert!(
        matches!(err, DatasetError::EmptyAnswer { line: 2, .. }),
        "{err:?}"
    );
    assert_names(&err, &path, 2);
    assert!(err.to_string().contains("empty answer"));
}

#[test]
fn empty_question_names_file_and_line() {
    let input = b"{\"question\": \"\", \"answer\": \"1\"}\n";
    let (path, err) = error_for(input, None);
    assert!(
        matches!(err, DatasetError::EmptyQuestion { line: 1, .. }),
        "{err:?}"
    );
    assert_names(&err, &path, 1);
}

#[test]
fn duplicate_id_names_both_lines() {
    let input = b"{\"id\": 1, \"question\": \"q\", \"answer\": \"1\"}\n{\"id\": 2, \"question\": \"q\", \"answer\": \"1\"}\n{\"id\": \"1\", \"question\": \"q\", \"answer\": \"1\"}\n";
    let (path, err) = error_for(input, None);
    assert!(
        matches!(&err, DatasetError::DuplicateId { id, line: 3, first_line: 1, .. } if id == "1"),
        "{err:?}"
    );
    assert_names(&err, &path, 3);
    assert!(err.to_string().contains(&format!("{}:1", path.display())));
}

#[test]
fn empty_file_names_the_file() {
    for input in [&b""[..], b"\n\n  \n"] {
        let (path, err) = error_for(input, None);
        assert!(matches!(err, DatasetError::EmptyFile { .. }), "{err:?}");
        assert!(err.to_string().starts_with(&path.display().to_string()));
        assert!(err.to_string().contains("empty"));
    }
}

#[test]
fn non_object_line_is_refused() {
    let (path, err) = error_for(b"[1, 2]\n", None);
    assert!(matches!(
        err,
        DatasetError::NotAnObject {
            line: 1,
            found: "a list",
            ..
        }
    ));
    assert_names(&err, &path, 1);
}

#[test]
fn object_question_is_refused() {
    let (path, err) = error_for(b"{\"question\": {\"a\": 1}, \"answer\": \"1\"}\n", None);
    assert!(
        matches!(&err, DatasetError::InvalidField { field, line: 1, .. } if field == "question")
    );
    assert_names(&err, &path, 1);
}

#[test]
fn missing_file_names_the_path() {
    let err = load("no/such/file.jsonl", None).unwrap_err();
    assert!(matches!(err, DatasetError::Io { .. }));
    assert!(err
        .to_string()
        .starts_with("no/such/file.jsonl: cannot read"));
}

#[test]
fn unknown_name_suggests_closest() {
    let err = load("gsm8", None).unwrap_err();
    assert!(
        matches!(&err, DatasetError::UnknownDataset { suggestion: Some(s), .. } if s == "gsm8k")
    );
    let message = err.to_string();
    assert!(message.contains("did you mean `gsm8k`?"), "{message}");
    assert!(message.contains("livemathbench_202412_hard"), "{message}");
}

#[test]
fn registered_dataset_errors_name_the_file_too() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = String::new();
    lines.push_str("{\"question\": \"a\", \"answer\": \"Reasoning\\n#### 5\"}\n");
    lines.push_str("{\"question\": \"b\", \"answer\": \"no final answer\"}\n");
    write(&dir, "gsm8k_test.jsonl", lines.as_bytes());
    let err = load_entry(lookup("gsm8k").unwrap(), dir.path()).unwrap_err();
    assert!(
        matches!(err, DatasetError::MalformedAnswer { line: 2, .. }),
        "{err:?}"
    );
    assert_names(&err, &dir.path().join("gsm8k_test.jsonl"), 2);

    std::fs::create_dir(dir.path().join("livemathbench_202412")).unwrap();
    for subset in ["CNMO", "CCEE", "AMC"] {
        write(
            &dir,
            &format!("livemathbench_202412/{subset}_en.jsonl"),
            b"{\"question\": \"q\", \"answer\": \"$1$\"}\n",
        );
    }
    write(&dir, "livemathbench_202412/WLPMC_en.jsonl", b"");
    let err = load_entry(lookup("livemathbench_202412").unwrap(), dir.path()).unwrap_err();
    assert!(matches!(err, DatasetError::EmptyFile { .. }), "{err:?}");
    assert!(err.to_string().contains("WLPMC_en.jsonl"));
}

// ---------- answer post-processing ----------

#[test]
fn after_hashes_takes_the_final_answer() {
    let (answer, solution) = after_hashes("3+4=<<3+4=7>>7 eggs\n#### 7").unwrap();
    assert_eq!(answer, "7");
    assert_eq!(solution, "3+4=7 eggs");
    assert_eq!(after_hashes("x\n#### 1,450,000").unwrap().0, "1450000");
    assert_eq!(after_hashes("x\n#### -3").unwrap().0, "-3");
    assert_eq!(after_hashes("x\n#### a, b").unwrap().0, "a, b");
    assert!(after_hashes("no marker").is_none());
}

#[test]
fn integer_float_drops_point_zero() {
    assert_eq!(integer_float("27.0"), "27");
    assert_eq!(integer_float("-1.0"), "-1");
    assert_eq!(integer_float("2.5"), "2.5");
    assert_eq!(integer_float("025"), "025");
    assert_eq!(integer_float("x.0"), "x.0");
}

#[test]
fn strip_dollars_only_when_wrapped() {
    assert_eq!(strip_dollars("$\\frac{3}{4}$"), "\\frac{3}{4}");
    assert_eq!(strip_dollars(" $$x^2$$ "), "x^2");
    assert_eq!(strip_dollars("$\n-1 + i.$"), "-1 + i.");
    assert_eq!(
        strip_dollars("$n = 1 \\text{ or } n \\equiv 2$ \\pmod{4}$"),
        "n = 1 \\text{ or } n \\equiv 2 \\pmod{4}"
    );
    assert_eq!(strip_dollars("38"), "38");
    assert_eq!(strip_dollars("a $x$ b"), "a $x$ b");
    assert_eq!(strip_dollars("$5\\$"), "$5\\$");
    assert_eq!(strip_dollars("$"), "$");
    assert_eq!(strip_dollars("$$"), "");
}

// ---------- few-shot ----------

#[test]
fn few_shot_from_dataset_skips_evaluated_ids() {
    let evaluated: BTreeSet<String> = ["arith-00", "arith-02"].map(String::from).into();
    let source = FewShot::FromDataset {
        source: "arith_demo".to_string(),
        fields: None,
        count: 3,
    };
    let examples = source.examples("arith_demo", &evaluated).unwrap();
    let demo = shipped_dataset("arith_demo");
    let expected: Vec<(String, String)> = ["arith-01", "arith-03", "arith-04"]
        .iter()
        .map(|id| {
            let p = demo.problem(id).unwrap();
            (p.question.clone(), p.worked_answer())
        })
        .collect();
    assert_eq!(examples, expected);
    // From another dataset, the evaluated ids do not matter.
    let other = source.examples("gsm8k", &evaluated).unwrap();
    assert_eq!(other[0].0, demo.problems[0].question);
}

#[test]
fn few_shot_inline_and_none() {
    let pairs = vec![("What is 1+1?".to_string(), "\\boxed{2}".to_string())];
    let inline = FewShot::Inline(pairs.clone());
    assert_eq!(inline.examples("x", &BTreeSet::new()).unwrap(), pairs);
    assert!(FewShot::None
        .examples("x", &BTreeSet::new())
        .unwrap()
        .is_empty());
}

#[test]
fn few_shot_asking_too_many_is_an_error() {
    let source = FewShot::FromDataset {
        source: "aime24".to_string(),
        fields: None,
        count: 31,
    };
    let err = source.examples("math500", &BTreeSet::new()).unwrap_err();
    assert!(matches!(
        err,
        DatasetError::NotEnoughExamples {
            requested: 31,
            available: 30,
            ..
        }
    ));
}

#[test]
fn few_shot_unknown_source_is_an_error() {
    let source = FewShot::FromDataset {
        source: "aime2024".to_string(),
        fields: None,
        count: 1,
    };
    let err = source.examples("math500", &BTreeSet::new()).unwrap_err();
    assert!(err.to_string().contains("did you mean `aime24`?"));
}

#[test]
fn choice_options_are_read_one_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        &dir,
        "mc.jsonl",
        "{\"question\": \"1+1?\", \"answer\": \"B\", \"options\": [\"A. 1\", \"B. 2\", \"C. 3\"]}\n\
         {\"question\": \"2+2?\", \"answer\": \"4\", \"options\": []}\n"
            .as_bytes(),
    );
    let dataset = load_path(&path, None).unwrap();
    assert_eq!(
        dataset.problems[0].choice_options(),
        ["A. 1", "B. 2", "C. 3"]
    );
    assert!(dataset.problems[1].choice_options().is_empty());
    // The grader maps the letter to its option's value.
    let gold = crate::grade::Gold::with_options("B", &dataset.problems[0].choice_options());
    let cfg = crate::grade::GradeConfig::default();
    let v = crate::grade::grade_against(&gold, "so the sum is \\boxed{2}", &cfg);
    assert_eq!(v.outcome, crate::grade::Outcome::Correct);
}
