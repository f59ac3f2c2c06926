//! The documentation against the code: every config example parses with gpassk's own reader,
//! every key the reader accepts has a row in docs/config.md, docs/cli.md is what
//! `gpassk man --markdown` prints, and every relative link leads to a file and heading that exist.
//! The rules are CONTRIBUTING.md's "Documentation".

use crate::common::{read, repo, run, stderr, stdout};
use gpassk::config::ConfigError;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The pages the tests read: the root's README, CONTRIBUTING and ARCHITECTURE, and docs/*.md.
fn pages() -> Vec<PathBuf> {
    let root = repo();
    let mut pages: Vec<PathBuf> = ["README.md", "CONTRIBUTING.md", "ARCHITECTURE.md"]
        .iter()
        .map(|p| root.join(p))
        .collect();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

fn rel(path: &Path) -> String {
    path.strip_prefix(repo())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// A fenced block of a page: its language, the marker comment on the line before its fence (if
/// any), its text, and the page line of its first text line.
struct Block {
    page: String,
    line: usize,
    lang: String,
    marker: Option<String>,
    text: String,
}

fn blocks(path: &Path) -> Vec<Block> {
    let text = read(path);
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(lang) = lines[i].trim_start().strip_prefix("```") else {
            i += 1;
            continue;
        };
        let before = i.checked_sub(1).map(|b| lines[b].trim());
        let marker = before
            .and_then(|b| b.strip_prefix("<!--")?.strip_suffix("-->"))
            .map(|m| m.trim().to_string());
        let end = (i + 1..lines.len())
            .find(|&j| lines[j].trim_start().starts_with("```"))
            .unwrap_or_else(|| panic!("{}:{}: fence never closed", rel(path), i + 1));
        found.push(Block {
            page: rel(path),
            line: i + 2,
            lang: lang.trim().to_string(),
            marker,
            text: lines[i + 1..end].join("\n") + "\n",
        });
        i = end + 1;
    }
    found
}

/// A config error placed on the page: `page:line: message`.
fn at_page(block: &Block, e: &ConfigError) -> String {
    match e {
        ConfigError::Invalid {
            line: Some(l),
            message,
            ..
        } => format!("{}:{}: {message}", block.page, block.line + l - 1),
        other => format!("{}:{}: {other}", block.page, block.line),
    }
}

/// A block with a `[[models]]` table is a whole config unless marked `<!-- partial -->`.
fn is_whole(block: &Block) -> bool {
    block.marker.as_deref() != Some("partial")
        && block.text.lines().any(|l| l.trim() == "[[models]]")
}

#[test]
fn every_toml_example_parses_with_the_config_reader() {
    let (mut raw, mut whole, mut failures) = (0, 0, Vec::new());
    for block in pages().iter().flat_map(|p| blocks(p)) {
        if block.lang != "toml" {
            continue;
        }
        raw += 1;
        let path = repo().join(&block.page);
        if let Err(e) = gpassk::config::read_raw(&block.text, &path) {
            failures.push(at_page(&block, &e));
            continue;
        }
        if is_whole(&block) {
            whole += 1;
            if let Err(e) = gpassk::config::load_str(&block.text, &path) {
                failures.push(at_page(&block, &e));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "config examples the reader refuses (see CONTRIBUTING.md, \"Documentation\"):\n{}",
        failures.join("\n")
    );
    // The examples this test exists for: the annotated config, prices, judge, search, verifier,
    // store, datasets.
    assert!(raw >= 8, "only {raw} ```toml blocks found");
    assert!(whole >= 3, "only {whole} whole configs found");
}

#[test]
fn a_renamed_key_in_an_example_is_caught_with_its_page_line() {
    let page = repo().join("docs/config.md");
    let block = blocks(&page)
        .into_iter()
        .find(|b| b.lang == "toml" && is_whole(b))
        .expect("docs/config.md has a whole config");
    let renamed = block.text.replacen("temperature = ", "temprature = ", 1);
    assert_ne!(renamed, block.text, "the annotated config sets temperature");
    let e = gpassk::config::read_raw(&renamed, &page).expect_err("an unknown key is refused");
    let msg = at_page(&block, &e);
    let line = block.line
        + renamed
            .lines()
            .position(|l| l.starts_with("temprature"))
            .unwrap();
    assert!(
        msg.starts_with(&format!("docs/config.md:{line}: unknown key `temprature`")),
        "{msg}"
    );
    assert!(msg.contains("did you mean `temperature`?"), "{msg}");
}

#[test]
fn settings_json_examples_parse() {
    let mut seen = 0;
    for block in pages().iter().flat_map(|p| blocks(p)) {
        if block.marker.as_deref() != Some("settings.json") {
            continue;
        }
        assert_eq!(block.lang, "json", "{}:{}", block.page, block.line);
        seen += 1;
        let path = repo().join(&block.page);
        if let Err(e) = gpassk::config::settings_json::parse(&block.text, &path) {
            panic!("{}:{}: {e}", block.page, block.line);
        }
    }
    assert!(seen >= 1, "no settings.json example found");
}

/// The keys the config reader accepts in one table: the ones its "unknown field" error lists.
fn accepted_keys(toml: &str) -> Vec<String> {
    let e = toml::from_str::<gpassk::config::raw::RawConfig>(toml)
        .expect_err("an unknown key is refused");
    let msg = e.message().to_string();
    let (_, listed) = msg
        .split_once("expected")
        .expect("the error lists the keys");
    listed
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The part of docs/config.md under the heading that names `table` (up to the next heading).
fn section<'a>(doc: &'a str, table: &str) -> &'a str {
    let at = doc
        .lines()
        .position(|l| l.starts_with('#') && l.contains(table))
        .unwrap_or_else(|| panic!("docs/config.md has no heading naming {table}"));
    let start: usize = doc.lines().take(at + 1).map(|l| l.len() + 1).sum();
    let rest = &doc[start..];
    let end = rest.find("\n#").map_or(rest.len(), |i| i + 1);
    &rest[..end]
}

/// Whether a table row of `section` documents `key` (in its first cell).
fn has_row(section: &str, key: &str) -> bool {
    let name = format!("`{key}`");
    section.lines().any(|l| {
        l.starts_with("| ") && l.split('|').nth(1).is_some_and(|cell| cell.contains(&name))
    })
}

#[test]
fn every_config_key_has_a_row_in_docs_config() {
    let doc = read(&repo().join("docs/config.md"));
    let tables = [
        ("`[api]`", "[api]\nzz_unknown = 1\n"),
        ("`[sampling]`", "[sampling]\nzz_unknown = 1\n"),
        ("`[evaluation]`", "[evaluation]\nzz_unknown = 1\n"),
        ("`[evaluation]`", "[evaluation.fields]\nzz_unknown = 1\n"),
        ("`[pricing]`", "[pricing]\nzz_unknown = 1\n"),
        ("`[judge]`", "[judge]\nzz_unknown = 1\n"),
        ("`[search]`", "[search]\nzz_unknown = 1\n"),
        ("`[verifier]`", "[verifier]\nzz_unknown = 1\n"),
        ("`[store]`", "[store]\nzz_unknown = 1\n"),
    ];
    let mut missing = Vec::new();
    for (heading, toml) in tables {
        let part = section(&doc, heading);
        for key in accepted_keys(toml) {
            if !has_row(part, &key) {
                missing.push(format!("{heading}: `{key}`"));
            }
        }
    }
    // A model entry takes its own keys and every [api] and [sampling] key but shutdown_grace.
    let shared: BTreeSet<String> = accepted_keys("[api]\nzz_unknown = 1\n")
        .into_iter()
        .chain(accepted_keys("[sampling]\nzz_unknown = 1\n"))
        .collect();
    let models = section(&doc, "`[[models]]`");
    for key in accepted_keys("[[models]]\nzz_unknown = 1\n") {
        if !shared.contains(&key) && !has_row(models, &key) {
            missing.push(format!("`[[models]]`: `{key}`"));
        }
    }
    let evaluation = section(&doc, "`[evaluation]`");
    for key in accepted_keys("[evaluation]\nfew_shot = { zz_unknown = 1 }\n") {
        if !evaluation.contains(&format!("`{key}`")) {
            missing.push(format!("`[evaluation]` few_shot: `{key}`"));
        }
    }
    let settings = section(&doc, "Two-file configuration");
    let e = gpassk::config::settings_json::parse("{\"zz_unknown\": 1}", Path::new("s.json"))
        .expect_err("an unknown settings.json key is refused");
    let e = e.to_string();
    let listed = e.split_once("expected").map_or("", |(_, l)| l);
    for key in listed.split('`').skip(1).step_by(2) {
        if !has_row(settings, key) {
            missing.push(format!("settings.json: `{key}`"));
        }
    }
    assert!(
        missing.is_empty(),
        "config keys without a row in docs/config.md:\n{}",
        missing.join("\n")
    );
}

/// The command that writes docs/cli.md, said by every failure about it.
const REGENERATE: &str = "cargo run --locked -q -- man --markdown > docs/cli.md";

#[test]
fn cli_reference_is_what_man_markdown_prints() {
    let out = run(&["man", "--markdown"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let generated = stdout(&out);
    let checked_in = std::fs::read_to_string(repo().join("docs/cli.md")).unwrap_or_default();
    if generated != checked_in {
        let line = generated
            .lines()
            .zip(checked_in.lines())
            .position(|(a, b)| a != b)
            .map_or(
                generated.lines().count().min(checked_in.lines().count()),
                |i| i,
            );
        panic!(
            "docs/cli.md differs from what `gpassk man --markdown` prints (first at line {}: {:?}); \
             regenerate it with `{REGENERATE}`",
            line + 1,
            generated.lines().nth(line).unwrap_or("<end>")
        );
    }
}

#[test]
fn cli_reference_names_every_subcommand_and_flag() {
    use clap::CommandFactory;
    let doc = read(&repo().join("docs/cli.md"));
    let cmd = gpassk::cli::Cli::command();
    let mut missing = Vec::new();
    let mut todo = vec![("gpassk".to_string(), &cmd)];
    while let Some((path, c)) = todo.pop() {
        for sub in c.get_subcommands().filter(|s| !s.is_hide_set()) {
            let name = format!("{path} {}", sub.get_name());
            if !doc.contains(&format!("# `{name}`\n")) {
                missing.push(name.clone());
            }
            for long in sub.get_arguments().filter(|a| !a.is_hide_set()) {
                if let Some(l) = long.get_long().filter(|l| !doc.contains(&format!("--{l}"))) {
                    missing.push(format!("{name} --{l}"));
                }
            }
            todo.push((name, sub));
        }
    }
    assert!(
        missing.is_empty(),
        "not in docs/cli.md ({REGENERATE}): {missing:?}"
    );
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a page's headings (fenced blocks aside), with GitHub's `-1`, `-2` for repeats.
fn anchors(text: &str) -> BTreeSet<String> {
    let (mut found, mut fenced) = (BTreeSet::new(), false);
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        let Some(title) = line.strip_prefix('#').map(|t| t.trim_start_matches('#')) else {
            continue;
        };
        if fenced || !title.starts_with(' ') {
            continue;
        }
        let base = slug(title);
        let mut name = base.clone();
        for n in 1.. {
            if found.insert(name.clone()) {
                break;
            }
            name = format!("{base}-{n}");
        }
    }
    found
}

/// The targets of a page's inline links `[text](target)`, with their lines, outside code.
fn links(text: &str) -> Vec<(usize, String)> {
    let (mut found, mut fenced) = (Vec::new(), false);
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Code spans cannot hold links.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        for part in prose.split("](").skip(1) {
            if let Some(end) = part.find(')') {
                found.push((i + 1, part[..end].to_string()));
            }
        }
    }
    found
}

#[test]
fn every_relative_link_leads_to_a_file_and_heading() {
    let (mut broken, mut checked) = (Vec::new(), 0);
    for page in pages() {
        let text = read(&page);
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let dest = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            let here = format!("{}:{line}: {target}", rel(&page));
            if !dest.exists() {
                broken.push(format!("{here}: no such file"));
            } else if !anchor.is_empty() && !anchors(&read(&dest)).contains(anchor) {
                broken.push(format!("{here}: no heading with that anchor"));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(checked >= 100, "only {checked} relative links found");
}

#[test]
fn github_anchors_are_computed_as_github_does() {
    let page = "# One\n## Test-time search (`strategy = \"mcts\"`): is the search stable?\n\
                ```sh\n# not a heading\n```\n## One\n### `gpassk store push`\n";
    let found = anchors(page);
    let want = [
        "one",
        "one-1",
        "test-time-search-strategy--mcts-is-the-search-stable",
        "gpassk-store-push",
    ];
    assert_eq!(found, want.iter().map(|s| s.to_string()).collect());
}

#[test]
fn readme_is_a_front_door() {
    let readme = read(&repo().join("README.md"));
    // Issue 42: a front door of at most 350 lines; the guide lives in docs/.
    let lines = readme.lines().count();
    assert!(
        lines <= 350,
        "README.md is {lines} lines; move sections into docs/"
    );
    assert!(
        readme.contains("cargo install --path . --locked"),
        "install section"
    );
    for command in ["scripts/demo.sh", "scripts/test.sh"] {
        assert!(readme.contains(command), "README names {command}");
    }
    assert!(
        readme.contains("](docs/README.md)"),
        "README links the docs index"
    );
    // The import guide moved out of README: README links it, the index lists it.
    let index = read(&repo().join("docs/README.md"));
    assert!(
        readme.contains("](docs/import.md)"),
        "README links docs/import.md"
    );
    assert!(
        index.contains("](import.md)"),
        "docs/README.md lists import.md"
    );
    assert!(
        !readme.contains("## Bringing runs from other harnesses"),
        "README still holds the import section"
    );
}

/// README sections whose content moved to a page under docs/: each keeps its heading (old links
/// land there) with a pointer of a few lines, and the page is indexed in docs/README.md. A
/// section still to move is added here when it moves.
/// (README heading, its page under docs/): sections moved out of README.
const MOVED_SECTIONS: &[(&str, &str)] = &[
    ("Intervals and comparisons", "intervals.md"),
    ("Grading", "grading.md"),
];

#[test]
fn moved_readme_sections_are_pointers() {
    let readme = read(&repo().join("README.md"));
    let index = read(&repo().join("docs/README.md"));
    for &(heading, page) in MOVED_SECTIONS {
        let start = readme
            .find(&format!("\n## {heading}\n"))
            .unwrap_or_else(|| panic!("README keeps the heading {heading}"));
        let body = &readme[start + heading.len() + 5..];
        let body = &body[..body.find("\n## ").unwrap_or(body.len())];
        assert!(
            body.contains(&format!("](docs/{page})")),
            "{heading} links docs/{page}"
        );
        let lines = body.lines().filter(|l| !l.trim().is_empty()).count();
        assert!(
            lines <= 3,
            "{heading} is a pointer, not the section ({lines} lines)"
        );
        assert!(
            index.contains(&format!("]({page})")),
            "docs/README.md indexes {page}"
        );
    }
}

/// docs/intervals.md carries the simulation's table, not a placeholder for it.
#[test]
fn the_intervals_page_shows_the_simulation() {
    let page = read(&repo().join("docs/intervals.md"));
    assert!(
        !(page.lines()).any(|l| ["TABLE", "PLANS_TABLE", "PLANS_BEFORE"].contains(&l.trim())),
        "the tables are filled in"
    );
    for column in ["coverage", "oracle", "promised → achieved"] {
        assert!(page.contains(column), "the table reports {column}");
    }
    assert!(
        page.contains("| 30 |") && page.contains("| 100 |"),
        "rows for 30 and 100 problems"
    );
}
