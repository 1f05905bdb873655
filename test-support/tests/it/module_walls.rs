//! No module circles in any crate of the workspace: no file reaches itself through the
//! `use crate::...`, `crate::`, `self::` and `super::` paths of other files (doc links aside).
//! A layer refers only to layers below it, so each file can be read, tested and changed with
//! what is below it alone.

use std::path::{Path, PathBuf};

use conflux_test_support::module_walls::circles;

/// The workspace's crates: the directories beside this crate with a `Cargo.toml` and a `src/`.
fn crates() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root");
    let mut out: Vec<PathBuf> = std::fs::read_dir(root)
        .expect("the workspace root is readable")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("Cargo.toml").is_file() && p.join("src").is_dir())
        .collect();
    out.sort();
    out
}

/// Circles found when this check was written, each as its crate and the files of its knot (a
/// strongly connected component), not yet taken apart. A knot found is tolerated only when all
/// its files are in one entry here; an entry that matches no knot any more fails the test, so
/// the list only shrinks. Nothing may be added to it. `MODULE_WALLS_ALL=1` reports these too.
const KNOWN: &[(&str, &[&str])] = &[];

#[test]
fn no_crate_has_a_module_circle() {
    let crates = crates();
    let names: Vec<String> = crates
        .iter()
        .filter_map(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .collect();
    for expected in ["graph", "scheduler", "runtime", "cli", "test-support"] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} not found in {names:?}"
        );
    }
    let mut report = Vec::new();
    let mut matched = vec![false; KNOWN.len()];
    for dir in &crates {
        let name = dir.file_name().unwrap_or_default().to_string_lossy();
        let found = circles(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for c in found {
            let files: Vec<String> = c
                .component
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            let known = KNOWN.iter().position(|(krate, knot)| {
                *krate == name && files.iter().all(|f| knot.contains(&f.as_str()))
            });
            match known {
                Some(k) if std::env::var_os("MODULE_WALLS_ALL").is_none() => matched[k] = true,
                _ => report.push(format!("{name}: {c}")),
            }
        }
    }
    for (k, (krate, knot)) in KNOWN.iter().enumerate() {
        if !matched[k] && std::env::var_os("MODULE_WALLS_ALL").is_none() {
            report.push(format!(
                "{krate}: the known knot {knot:?} is gone: remove it from KNOWN"
            ));
        }
    }
    assert!(
        report.is_empty(),
        "{} module circle(s); a file must not reach itself through other files' paths \
         (move what both sides use into a module below both):\n{}",
        report.len(),
        report.join("\n")
    );
}
