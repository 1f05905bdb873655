//! The module graph of a crate's sources and the circles in it.
//!
//! A crate's files refer to each other through paths: `use crate::a::B`, `crate::a::f()`,
//! `super::B`, `self::child::C` and `child::C` (a module declared in the file). Each such path is
//! resolved to the file that defines what it names: module by module from the crate root (an
//! inline `mod` belongs to its file), then, when the path goes on past the last module, through
//! the `use` bindings of that module (re-exports such as `pub use scheduler::Scheduler` lead to
//! the file that defines `Scheduler`). Doc links and comments are not paths, so they do not count;
//! paths inside macro invocations do (`matches!(e, crate::api::Event::Tick)`). A `mod` declaration
//! alone is no reference: a parent may declare a child that refers back to it. Items compiled for
//! tests only (`#[cfg(test)]`, e.g. a `mod tests`) are left out: tests may use anything.
//!
//! A **circle** is a file that reaches itself through references of other files. [`circles`]
//! finds them per crate root (`src/lib.rs`, `src/main.rs`, `src/bin/*.rs`): one circle per
//! strongly connected component of the file graph, shortest first through its first file, each
//! step with the line and the path that makes it.
//!
//! Parsing is `syn`'s (a full parse of every file); a workspace of a few hundred files takes a
//! fraction of a second.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// Why a crate's module graph could not be built.
#[derive(Debug)]
pub enum ModuleGraphError {
    /// A file could not be read.
    Read(PathBuf, std::io::Error),
    /// A file is not valid Rust.
    Parse(PathBuf, syn::Error),
    /// A `mod name;` declaration whose file is neither `name.rs` nor `name/mod.rs`.
    MissingModule(PathBuf, String),
}

impl fmt::Display for ModuleGraphError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModuleGraphError::Read(p, e) => write!(f, "cannot read {}: {e}", p.display()),
            ModuleGraphError::Parse(p, e) => {
                let at = e.span().start();
                write!(f, "{}:{}:{}: {e}", p.display(), at.line, at.column + 1)
            }
            ModuleGraphError::MissingModule(p, name) => {
                write!(f, "{}: no file for `mod {name};`", p.display())
            }
        }
    }
}

impl std::error::Error for ModuleGraphError {}

/// One step of a circle: `from` refers to `to` at `line` through `path`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// The referring file, relative to the crate's directory.
    pub from: PathBuf,
    /// The referred file.
    pub to: PathBuf,
    /// The line of the first such reference in `from` (1-based).
    pub line: usize,
    /// The path as written (`crate::scheduler::Scheduler`).
    pub path: String,
}

/// A module circle: each step's `to` is the next step's `from`, the last step's `to` the first
/// step's `from`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Circle {
    /// The steps, from the circle's first file (in path order) round to it.
    pub steps: Vec<Reference>,
    /// Every file of the strongly connected component the circle lies in (a longer circle may
    /// join any of them), sorted.
    pub component: Vec<PathBuf>,
}

impl fmt::Display for Circle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in &self.steps {
            write!(f, "{} -> ", s.from.display())?;
        }
        if let Some(first) = self.steps.first() {
            write!(f, "{}", first.from.display())?;
        }
        for s in &self.steps {
            write!(
                f,
                "\n    {}:{} `{}` -> {}",
                s.from.display(),
                s.line,
                s.path,
                s.to.display()
            )?;
        }
        if self.component.len() > self.steps.len() {
            let files: Vec<String> = self
                .component
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            write!(f, "\n    (the whole knot: {})", files.join(", "))?;
        }
        Ok(())
    }
}

/// The module circles of the crate in `crate_dir` (a directory with `src/`), over every crate
/// root it has: `src/lib.rs`, `src/main.rs` and `src/bin/*.rs`. Empty when there are none.
///
/// # Errors
/// A file that cannot be read or parsed, or a `mod` declaration without its file.
pub fn circles(crate_dir: &Path) -> Result<Vec<Circle>, ModuleGraphError> {
    let src = crate_dir.join("src");
    let mut roots = Vec::new();
    for name in ["lib.rs", "main.rs"] {
        if src.join(name).is_file() {
            roots.push(src.join(name));
        }
    }
    if let Ok(dir) = std::fs::read_dir(src.join("bin")) {
        let mut bins: Vec<PathBuf> = dir
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "rs"))
            .collect();
        bins.sort();
        roots.extend(bins);
    }
    let mut out = Vec::new();
    for root in roots {
        let graph = CrateGraph::load(&root)?;
        out.extend(graph.circles(crate_dir));
    }
    Ok(out)
}

type ModuleId = usize;
type FileId = usize;

#[derive(Debug, Default)]
struct Module {
    file: FileId,
    parent: Option<ModuleId>,
    children: BTreeMap<String, ModuleId>,
    /// Names of items defined in the module (types, functions, traits, constants, macros).
    items: BTreeSet<String>,
    /// `use` bindings: name -> absolute path (from the crate root).
    uses: BTreeMap<String, Vec<String>>,
    /// `use path::*`: absolute paths.
    globs: Vec<Vec<String>>,
}

/// A path written in a module, before resolution.
struct Written {
    module: ModuleId,
    line: usize,
    segments: Vec<String>,
}

struct CrateGraph {
    files: Vec<PathBuf>,
    modules: Vec<Module>,
    written: Vec<Written>,
}

impl CrateGraph {
    fn load(root: &Path) -> Result<CrateGraph, ModuleGraphError> {
        let mut g = CrateGraph {
            files: Vec::new(),
            modules: Vec::new(),
            written: Vec::new(),
        };
        let dir = root.parent().unwrap_or(Path::new(".")).to_path_buf();
        // lib.rs, main.rs: children beside them; src/bin/x.rs: children in src/bin/x/.
        let child_dir = if root
            .file_name()
            .is_some_and(|n| n == "lib.rs" || n == "main.rs")
        {
            dir
        } else {
            root.with_extension("")
        };
        g.load_file(root, child_dir, None, None)?;
        Ok(g)
    }

    fn load_file(
        &mut self,
        path: &Path,
        child_dir: PathBuf,
        parent: Option<ModuleId>,
        name: Option<String>,
    ) -> Result<ModuleId, ModuleGraphError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ModuleGraphError::Read(path.to_path_buf(), e))?;
        let ast =
            syn::parse_file(&text).map_err(|e| ModuleGraphError::Parse(path.to_path_buf(), e))?;
        let file = self.files.len();
        self.files.push(path.to_path_buf());
        let module = self.new_module(file, parent, name);
        self.load_items(&ast.items, module, file, &child_dir, path)?;
        Ok(module)
    }

    fn new_module(
        &mut self,
        file: FileId,
        parent: Option<ModuleId>,
        name: Option<String>,
    ) -> ModuleId {
        let id = self.modules.len();
        self.modules.push(Module {
            file,
            parent,
            ..Module::default()
        });
        if let (Some(p), Some(n)) = (parent, name) {
            self.modules[p].children.insert(n, id);
        }
        id
    }

    fn load_items(
        &mut self,
        items: &[syn::Item],
        module: ModuleId,
        file: FileId,
        child_dir: &Path,
        path: &Path,
    ) -> Result<(), ModuleGraphError> {
        for item in items {
            if is_cfg_test(item) {
                continue;
            }
            match item {
                syn::Item::Mod(m) => {
                    let name = m.ident.to_string();
                    let dir = child_dir.join(&name);
                    if let Some((_, inner)) = &m.content {
                        let id = self.new_module(file, Some(module), Some(name));
                        self.load_items(inner, id, file, &dir, path)?;
                        self.collect_attrs(&m.attrs, module);
                    } else {
                        let flat = child_dir.join(format!("{name}.rs"));
                        let nested = dir.join("mod.rs");
                        let found = if flat.is_file() {
                            flat
                        } else if nested.is_file() {
                            nested
                        } else {
                            return Err(ModuleGraphError::MissingModule(path.to_path_buf(), name));
                        };
                        self.load_file(&found, dir, Some(module), Some(name))?;
                    }
                }
                syn::Item::Use(u) => {
                    let mut prefix = Vec::new();
                    self.collect_use(&u.tree, module, &mut prefix);
                }
                other => {
                    if let Some(name) = item_name(other) {
                        self.modules[module].items.insert(name);
                    }
                    let mut v = PathVisitor {
                        graph: self,
                        module,
                    };
                    v.visit_item(other);
                }
            }
        }
        Ok(())
    }

    fn collect_attrs(&mut self, attrs: &[syn::Attribute], module: ModuleId) {
        let mut v = PathVisitor {
            graph: self,
            module,
        };
        for a in attrs {
            v.visit_attribute(a);
        }
    }

    /// Records the bindings and references of a `use` tree under `prefix` (segments as written).
    fn collect_use(&mut self, tree: &syn::UseTree, module: ModuleId, prefix: &mut Vec<String>) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.collect_use(&p.tree, module, prefix);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let name = n.ident.to_string();
                let line = n.ident.span().start().line;
                self.bind_use(module, prefix, &name, &name, line);
            }
            syn::UseTree::Rename(r) => {
                let line = r.ident.span().start().line;
                self.bind_use(
                    module,
                    prefix,
                    &r.ident.to_string(),
                    &r.rename.to_string(),
                    line,
                );
            }
            syn::UseTree::Glob(g) => {
                let line = g.star_token.span.start().line;
                if let Some(abs) = self.absolute(module, prefix) {
                    self.modules[module].globs.push(abs);
                    self.written.push(Written {
                        module,
                        line,
                        segments: prefix.clone(),
                    });
                }
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.collect_use(t, module, prefix);
                }
            }
        }
    }

    fn bind_use(
        &mut self,
        module: ModuleId,
        prefix: &[String],
        name: &str,
        as_: &str,
        line: usize,
    ) {
        let mut segments = prefix.to_vec();
        if name != "self" {
            segments.push(name.to_string());
        }
        let Some(abs) = self.absolute(module, &segments) else {
            return;
        };
        let bound = if name == "self" {
            prefix.last().cloned().unwrap_or_default()
        } else {
            as_.to_string()
        };
        if bound != "_" {
            self.modules[module].uses.insert(bound, abs);
        }
        self.written.push(Written {
            module,
            line,
            segments,
        });
    }

    /// The path from the crate root that `segments`, written in `module`, names, if it is a path
    /// into this crate (`crate::`, `self::`, `super::`, or a child module of `module`).
    fn absolute(&self, module: ModuleId, segments: &[String]) -> Option<Vec<String>> {
        let first = segments.first()?;
        let (mut at, rest) = match first.as_str() {
            "crate" => (0, &segments[1..]),
            "self" | "super" => (module, segments),
            name if self.modules[module].children.contains_key(name) => (module, segments),
            _ => return None,
        };
        let mut rest = rest;
        while let Some(s) = rest.first() {
            match s.as_str() {
                "self" => {}
                "super" => at = self.modules[at].parent?,
                _ => break,
            }
            rest = &rest[1..];
        }
        let mut abs = self.module_path(at);
        abs.extend(rest.iter().cloned());
        Some(abs)
    }

    fn module_path(&self, mut m: ModuleId) -> Vec<String> {
        let mut names = Vec::new();
        while let Some(p) = self.modules[m].parent {
            if let Some((name, _)) = self.modules[p].children.iter().find(|(_, &c)| c == m) {
                names.push(name.clone());
            }
            m = p;
        }
        names.reverse();
        names
    }

    /// The file that defines what the absolute path names.
    fn resolve(&self, abs: &[String], depth: u32) -> FileId {
        let mut m = 0;
        let mut rest = abs;
        while let Some((first, tail)) = rest.split_first() {
            match self.modules[m].children.get(first) {
                Some(&c) => {
                    m = c;
                    rest = tail;
                }
                None => break,
            }
        }
        let module = &self.modules[m];
        let Some(name) = rest.first() else {
            return module.file;
        };
        if depth < 16 && !module.items.contains(name) {
            if let Some(target) = module.uses.get(name) {
                let mut next = target.clone();
                next.extend(rest[1..].iter().cloned());
                return self.resolve(&next, depth + 1);
            }
            for glob in &module.globs {
                let mut next = glob.clone();
                next.extend(rest.iter().cloned());
                let f = self.resolve(&next, depth + 1);
                if f != module.file {
                    return f;
                }
            }
        }
        module.file
    }

    /// file -> file -> the first reference making that edge (line, path as written).
    fn edges(&self) -> BTreeMap<FileId, BTreeMap<FileId, (usize, String)>> {
        let mut edges: BTreeMap<FileId, BTreeMap<FileId, (usize, String)>> = BTreeMap::new();
        for w in &self.written {
            let Some(abs) = self.absolute(w.module, &w.segments) else {
                continue;
            };
            let from = self.modules[w.module].file;
            let to = self.resolve(&abs, 0);
            if from == to {
                continue;
            }
            let e = edges.entry(from).or_default();
            let candidate = (w.line, w.segments.join("::"));
            match e.get(&to) {
                Some(old) if old.0 <= candidate.0 => {}
                _ => {
                    e.insert(to, candidate);
                }
            }
        }
        edges
    }

    fn circles(&self, crate_dir: &Path) -> Vec<Circle> {
        let edges = self.edges();
        let n = self.files.len();
        let rel = |f: FileId| -> PathBuf {
            self.files[f]
                .strip_prefix(crate_dir)
                .unwrap_or(&self.files[f])
                .to_path_buf()
        };
        let succ: Vec<Vec<FileId>> = (0..n)
            .map(|f| {
                edges
                    .get(&f)
                    .map(|e| e.keys().copied().collect())
                    .unwrap_or_default()
            })
            .collect();
        let mut out = Vec::new();
        for comp in strongly_connected(&succ) {
            if comp.len() < 2 {
                continue;
            }
            let mut comp = comp;
            comp.sort_by_key(|&f| rel(f).display().to_string());
            let start = comp[0];
            let inside: BTreeSet<FileId> = comp.iter().copied().collect();
            // Breadth-first from the start back to it, within the component.
            let mut prev: HashMap<FileId, FileId> = HashMap::new();
            let mut queue = VecDeque::from([start]);
            let mut last = None;
            'bfs: while let Some(f) = queue.pop_front() {
                for &t in &succ[f] {
                    if !inside.contains(&t) {
                        continue;
                    }
                    if t == start {
                        last = Some(f);
                        break 'bfs;
                    }
                    if let std::collections::hash_map::Entry::Vacant(e) = prev.entry(t) {
                        e.insert(f);
                        queue.push_back(t);
                    }
                }
            }
            let Some(mut f) = last else { continue };
            let mut chain = vec![f];
            while f != start {
                f = prev[&f];
                chain.push(f);
            }
            chain.reverse();
            let steps = (0..chain.len())
                .map(|i| {
                    let from = chain[i];
                    let to = chain[(i + 1) % chain.len()];
                    let (line, path) = edges[&from][&to].clone();
                    Reference {
                        from: rel(from),
                        to: rel(to),
                        line,
                        path,
                    }
                })
                .collect();
            out.push(Circle {
                steps,
                component: comp.iter().map(|&f| rel(f)).collect(),
            });
        }
        out.sort_by(|a, b| a.component.cmp(&b.component));
        out
    }
}

/// Tarjan's strongly connected components, iterative.
fn strongly_connected(succ: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = succ.len();
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut out = Vec::new();
    let mut next = 0;
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work = vec![(root, 0usize)];
        while let Some(&mut (v, ref mut i)) = work.last_mut() {
            if *i == 0 && index[v] == usize::MAX {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if let Some(&w) = succ[v].get(*i) {
                *i += 1;
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut comp = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    comp.push(w);
                    if w == v {
                        break;
                    }
                }
                out.push(comp);
            }
        }
    }
    out
}

/// Whether an item is compiled for tests only (`#[cfg(test)]`): test code may use anything of
/// its crate, so its paths are no part of the layering.
fn is_cfg_test(item: &syn::Item) -> bool {
    let attrs = match item {
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        _ => return false,
    };
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && matches!(&a.meta, syn::Meta::List(l) if l.tokens.to_string() == "test")
    })
}

fn item_name(item: &syn::Item) -> Option<String> {
    let ident = match item {
        syn::Item::Const(i) => &i.ident,
        syn::Item::Enum(i) => &i.ident,
        syn::Item::Fn(i) => &i.sig.ident,
        syn::Item::Macro(i) => i.ident.as_ref()?,
        syn::Item::Static(i) => &i.ident,
        syn::Item::Struct(i) => &i.ident,
        syn::Item::Trait(i) => &i.ident,
        syn::Item::TraitAlias(i) => &i.ident,
        syn::Item::Type(i) => &i.ident,
        syn::Item::Union(i) => &i.ident,
        _ => return None,
    };
    Some(ident.to_string())
}

/// Collects the paths of one item (not a `mod` or a `use` at module level, which
/// [`CrateGraph::load_items`] takes) into the graph, as written in `module`.
struct PathVisitor<'g> {
    graph: &'g mut CrateGraph,
    module: ModuleId,
}

impl PathVisitor<'_> {
    fn record(&mut self, segments: Vec<String>, line: usize) {
        if segments.len() < 2 {
            return;
        }
        if self.graph.absolute(self.module, &segments).is_some() {
            self.graph.written.push(Written {
                module: self.module,
                line,
                segments,
            });
        }
    }

    /// `crate::a::b`, `super::x`, `self::y::z` and `child::w` inside a macro's tokens.
    fn scan_tokens(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            if let TokenTree::Group(g) = &trees[i] {
                self.scan_tokens(g.stream());
                i += 1;
                continue;
            }
            let preceded_by_colons = i >= 1 && is_punct(&trees[i - 1], ':');
            if let (TokenTree::Ident(first), false) = (&trees[i], preceded_by_colons) {
                let line = first.span().start().line;
                let mut segments = vec![first.to_string()];
                let mut j = i + 1;
                while j + 2 < trees.len()
                    && is_punct(&trees[j], ':')
                    && is_punct(&trees[j + 1], ':')
                {
                    match trees.get(j + 2) {
                        Some(TokenTree::Ident(next)) => {
                            segments.push(next.to_string());
                            j += 3;
                        }
                        _ => break,
                    }
                }
                if segments.len() >= 2 {
                    self.record(segments, line);
                    i = j;
                    continue;
                }
            }
            i += 1;
        }
    }
}

fn is_punct(t: &TokenTree, c: char) -> bool {
    matches!(t, TokenTree::Punct(p) if p.as_char() == c)
}

impl<'ast> Visit<'ast> for PathVisitor<'_> {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() {
            let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
            let line = path
                .segments
                .first()
                .map_or(0, |s| s.ident.span().start().line);
            self.record(segments, line);
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        // A `use` inside a function body: references, not bindings of the module.
        let mut prefix = Vec::new();
        let mut scratch = UseRefs::default();
        scratch.collect(&u.tree, &mut prefix);
        for (segments, line) in scratch.paths {
            if self.graph.absolute(self.module, &segments).is_some() {
                self.graph.written.push(Written {
                    module: self.module,
                    line,
                    segments,
                });
            }
        }
    }

    fn visit_item_mod(&mut self, _m: &'ast syn::ItemMod) {
        // Modules are loaded by `load_items`, with their own context.
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        self.scan_tokens(mac.tokens.clone());
    }

    fn visit_attribute(&mut self, attr: &'ast syn::Attribute) {
        // Doc comments are `#[doc = "..."]`: their text is no path. Other attributes' tokens
        // may hold paths (`#[serde(with = ...)]` is a string too, so only bare paths count).
        if !attr.path().is_ident("doc") {
            if let syn::Meta::List(list) = &attr.meta {
                self.scan_tokens(list.tokens.clone());
            }
        }
    }
}

/// The paths of a `use` tree, as written, with their lines.
#[derive(Default)]
struct UseRefs {
    paths: Vec<(Vec<String>, usize)>,
}

impl UseRefs {
    fn collect(&mut self, tree: &syn::UseTree, prefix: &mut Vec<String>) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.collect(&p.tree, prefix);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut s = prefix.clone();
                if n.ident != "self" {
                    s.push(n.ident.to_string());
                }
                self.paths.push((s, n.ident.span().start().line));
            }
            syn::UseTree::Rename(r) => {
                let mut s = prefix.clone();
                s.push(r.ident.to_string());
                self.paths.push((s, r.ident.span().start().line));
            }
            syn::UseTree::Glob(g) => {
                self.paths
                    .push((prefix.clone(), g.star_token.span.start().line));
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.collect(t, prefix);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes a crate of `files` (path under `src/`, text) into a temporary directory.
    fn krate(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        for (path, text) in files {
            let p = dir.path().join("src").join(path);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        }
        dir
    }

    fn names(c: &Circle) -> Vec<String> {
        c.steps
            .iter()
            .map(|s| s.from.display().to_string())
            .collect()
    }

    #[test]
    fn a_two_file_circle_through_a_re_export_is_named_with_its_lines() {
        let dir = krate(&[
            ("lib.rs", "mod a;\nmod b;\npub use a::A;\n"),
            ("a.rs", "use crate::b::B;\npub struct A(B);\n"),
            (
                "b.rs",
                "pub struct B;\nimpl B {\n    fn f(_: crate::A) {}\n}\n",
            ),
        ]);
        let found = circles(dir.path()).expect("parsed");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(names(&found[0]), ["src/a.rs", "src/b.rs"]);
        assert_eq!(found[0].steps[0].line, 1);
        assert_eq!(found[0].steps[0].path, "crate::b::B");
        // `crate::A` goes through lib.rs's re-export to a.rs, on line 3 of b.rs.
        assert_eq!(found[0].steps[1].line, 3);
        assert_eq!(found[0].steps[1].path, "crate::A");
        assert_eq!(
            found[0].to_string().lines().next(),
            Some("src/a.rs -> src/b.rs -> src/a.rs")
        );
    }

    #[test]
    fn a_child_using_its_parent_and_the_parent_its_child_is_a_circle() {
        let dir = krate(&[
            ("lib.rs", "mod p;\n"),
            ("p.rs", "mod c;\nuse c::C;\npub(crate) struct P(C);\n"),
            ("p/c.rs", "pub(crate) struct C;\nfn f(_: super::P) {}\n"),
        ]);
        let found = circles(dir.path()).expect("parsed");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(names(&found[0]), ["src/p.rs", "src/p/c.rs"]);
    }

    #[test]
    fn macros_count_and_doc_links_comments_tests_and_declarations_do_not() {
        let dir = krate(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            (
                "a.rs",
                "/// See [`crate::b::B`].\n// crate::b::B\npub struct A;\n\
                 #[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
            ),
            ("b.rs", "pub struct B;\nfn f() { let _ = crate::a::A; }\n"),
        ]);
        assert_eq!(circles(dir.path()).expect("parsed"), []);

        let dir = krate(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            (
                "a.rs",
                "pub struct A;\n#[cfg(test)]\nmod tests {\n    use crate::b::B;\n}\n\
                 #[cfg(test)]\nfn helper(_: crate::b::B) {}\n",
            ),
            ("b.rs", "pub struct B;\nfn f() { let _ = crate::a::A; }\n"),
        ]);
        assert_eq!(circles(dir.path()).expect("parsed"), []);

        let dir = krate(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            (
                "a.rs",
                "pub struct A;\nfn g(x: u8) -> bool { matches!(x, crate::b::B) }\n",
            ),
            (
                "b.rs",
                "pub const B: u8 = 1;\nfn f() { let _ = crate::a::A; }\n",
            ),
        ]);
        let found = circles(dir.path()).expect("parsed");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].steps[0].line, 2);
    }

    #[test]
    fn a_chain_through_a_lower_module_is_no_circle_and_three_files_round_are_one() {
        let dir = krate(&[
            ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
            ("a.rs", "use crate::b::B;\npub struct A(B);\n"),
            ("b.rs", "use crate::c::C;\npub struct B(C);\n"),
            ("c.rs", "pub struct C;\n"),
        ]);
        assert_eq!(circles(dir.path()).expect("parsed"), []);

        let dir = krate(&[
            ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
            ("a.rs", "use crate::b::B;\npub struct A(B);\n"),
            ("b.rs", "use crate::c::C;\npub struct B(C);\n"),
            ("c.rs", "pub struct C;\nfn f(_: &crate::a::A) {}\n"),
        ]);
        let found = circles(dir.path()).expect("parsed");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(names(&found[0]), ["src/a.rs", "src/b.rs", "src/c.rs"]);
    }
}
