//! The README's command synopsis kept in step with the command line: every subcommand (and
//! subcommand of a subcommand) that `conflux --help` lists has a synopsis in the README's
//! synopsis block, and each synopsis lists exactly the long flags its `--help` lists, no more
//! and no fewer.

use std::collections::{BTreeMap, BTreeSet};

use crate::support::{conflux, repo};

/// The subcommand names of a `--help` text (its `Commands:` section), `help` left out.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// The long flags of a `--help` text, `--help` and `--version` left out.
fn flags(help: &str) -> BTreeSet<String> {
    help.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            // `-o, --output <OUTPUT>`: the long form follows the short one (and a description
            // after a long flag may hold ", " too, so only a short flag is split there).
            let l = if l.starts_with('-') && !l.starts_with("--") {
                l.split_once(", ").map_or(l, |(_, long)| long)
            } else {
                l
            };
            l.strip_prefix("--")
                .map(|rest| rest.split([' ', '=', '[', '<']).next().unwrap_or(rest))
        })
        .filter(|f| !f.is_empty() && *f != "help" && *f != "version")
        .map(|f| format!("--{f}"))
        .collect()
}

fn help(args: &[&str]) -> String {
    let mut args = args.to_vec();
    args.push("--help");
    let out = conflux(&args);
    assert!(out.status.success(), "{args:?}");
    String::from_utf8(out.stdout).expect("UTF-8 help")
}

/// The README's synopses: the code block after `<!-- synopsis -->`, one entry per line that
/// starts with `conflux `, continued by the indented lines after it. Keyed by the entry's
/// words up to the first argument (`FILE`, `[...]`, `--flag`, ...): `plan stats`, `run`.
fn synopses(readme: &str) -> BTreeMap<String, String> {
    let block = readme
        .split("<!-- synopsis -->")
        .nth(1)
        .expect("the README marks its synopsis block with <!-- synopsis -->")
        .split("```")
        .nth(1)
        .expect("a code block after the mark");
    let mut entries: BTreeMap<String, String> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in block.lines() {
        if let Some(rest) = line.strip_prefix("conflux ") {
            let name: Vec<&str> = rest
                .split_whitespace()
                .take_while(|w| {
                    w.chars().all(|c| c.is_ascii_lowercase() || c == '-') && !w.starts_with('-')
                })
                .collect();
            let name = name.join(" ");
            assert!(
                !entries.contains_key(&name),
                "two synopses of conflux {name}"
            );
            entries.insert(name.clone(), rest.to_owned());
            current = Some(name);
        } else if line.starts_with(' ') {
            if let Some(name) = &current {
                let text = entries.get_mut(name).expect("current entry");
                text.push('\n');
                text.push_str(line);
            }
        }
    }
    entries
}

/// The long flags of a synopsis: every `--word` in it.
fn synopsis_flags(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_subcommand_has_a_synopsis_with_exactly_its_flags() {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let synopses = synopses(&readme);
    let mut problems = Vec::new();
    let top = subcommands(&help(&[]));
    assert!(top.len() > 10, "{top:?}");
    let mut documented = BTreeSet::new();
    for command in &top {
        let nested = subcommands(&help(&[command]));
        let paths: Vec<Vec<&str>> = if nested.is_empty() {
            vec![vec![command.as_str()]]
        } else {
            nested
                .iter()
                .map(|n| vec![command.as_str(), n.as_str()])
                .collect()
        };
        for path in paths {
            let name = path.join(" ");
            documented.insert(name.clone());
            let Some(synopsis) = synopses.get(&name) else {
                problems.push(format!("no synopsis of conflux {name}"));
                continue;
            };
            let want = flags(&help(&path));
            let have = synopsis_flags(synopsis);
            for flag in want.difference(&have) {
                problems.push(format!(
                    "conflux {name}: {flag} is missing from its synopsis"
                ));
            }
            for flag in have.difference(&want) {
                problems.push(format!(
                    "conflux {name}: {flag} is in its synopsis but not in --help"
                ));
            }
        }
    }
    for name in synopses.keys() {
        if !documented.contains(name) {
            problems.push(format!(
                "a synopsis of conflux {name}, which is no subcommand"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "README.md against --help:\n{}",
        problems.join("\n")
    );
}

#[test]
fn help_texts_and_synopses_are_read_as_written() {
    let text = "Usage: conflux [OPTIONS]\n\nCommands:\n  run    Run\n  help   Print\n\nOptions:\n  -o, --output <OUTPUT>  Write\n      --edge-stats       Label, with a comma\n  -h, --help             Print help\n";
    assert_eq!(subcommands(text), ["run"]);
    assert_eq!(
        flags(text),
        BTreeSet::from(["--output".to_owned(), "--edge-stats".to_owned()])
    );
    let readme = "x\n<!-- synopsis -->\n```sh\nconflux run FILE [--seed S]\n    [--quiet]\nconflux plan stats FILE [--format text|json]\n```\n";
    let s = synopses(readme);
    assert_eq!(s.keys().collect::<Vec<_>>(), ["plan stats", "run"]);
    assert_eq!(
        synopsis_flags(&s["run"]),
        BTreeSet::from(["--seed".to_owned(), "--quiet".to_owned()])
    );
}

/// Every configuration key has its row in the README's keys table, with its commands.
#[test]
fn every_configuration_key_is_in_the_readme() {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let mut missing = Vec::new();
    for key in conflux_config::KEYS {
        let row = readme
            .lines()
            .find(|l| l.starts_with(&format!("| `{}` |", key.name)));
        let commands: Vec<&str> = key.commands.iter().map(|c| c.name()).collect();
        match row {
            Some(row) if row.contains(&format!("| {} |", commands.join(", "))) => {}
            _ => missing.push(key.name),
        }
    }
    assert!(
        missing.is_empty(),
        "keys missing from (or wrong in) the README's table: {missing:?}"
    );
}
