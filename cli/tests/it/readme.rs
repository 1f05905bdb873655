//! The README's command summary kept in step with the command line: every subcommand (and
//! subcommand of a subcommand) `conflux --help` lists, and every flag each one's `--help`
//! lists, appears in README.md.

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
fn flags(help: &str) -> Vec<String> {
    let mut flags: Vec<String> = help
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = l.strip_prefix("-").map_or(l, |_| {
                // `-o, --output <OUTPUT>`: the long form follows the short one.
                l.split_once(", ").map_or(l, |(_, long)| long)
            });
            l.strip_prefix("--")
                .map(|rest| rest.split([' ', '=', '[', '<']).next().unwrap_or(rest))
        })
        .filter(|f| !f.is_empty() && *f != "help" && *f != "version")
        .map(|f| format!("--{f}"))
        .collect();
    flags.dedup();
    flags
}

fn help(args: &[&str]) -> String {
    let mut args = args.to_vec();
    args.push("--help");
    let out = conflux(&args);
    assert!(out.status.success(), "{args:?}");
    String::from_utf8(out.stdout).expect("UTF-8 help")
}

#[test]
fn every_subcommand_and_flag_is_in_the_readme() {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let mut missing = Vec::new();
    let top = subcommands(&help(&[]));
    assert!(top.len() > 10, "{top:?}");
    for command in &top {
        let text = help(&[command]);
        let nested = subcommands(&text);
        let mut paths = vec![vec![command.as_str()]];
        paths.extend(nested.iter().map(|n| vec![command.as_str(), n.as_str()]));
        for path in paths {
            let text = help(&path);
            let name = format!("conflux {}", path.join(" "));
            // `conflux plan stats` may be summarised as `conflux plan stats|edit|...`.
            let named = readme.contains(&name)
                || (path.len() == 2 && readme.contains(&format!(" {}", path[1])));
            if !named {
                missing.push(name.clone());
            }
            for flag in flags(&text) {
                if !readme.contains(&flag) {
                    missing.push(format!("{name} {flag}"));
                }
            }
        }
    }
    assert!(missing.is_empty(), "not in README.md: {missing:?}");
}

#[test]
fn help_texts_are_read_as_clap_writes_them() {
    let text = "Usage: conflux [OPTIONS]\n\nCommands:\n  run    Run\n  help   Print\n\nOptions:\n  -o, --output <OUTPUT>  Write\n      --edge-stats       Label\n  -h, --help             Print help\n";
    assert_eq!(subcommands(text), ["run"]);
    assert_eq!(flags(text), ["--output", "--edge-stats"]);
}
