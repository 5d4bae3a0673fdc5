//! A crate's files and which of them each file imports from, read with `syn`.
//!
//! The rule, by example, for code in file `a.rs`:
//! - `use crate::b::Thing;`, `use super::b::{Thing, Other}`, `crate::b::Thing::new()` written
//!   in code, `pub(crate) use` re-exports: an edge `a.rs -> ` the file that defines `Thing`.
//!   A re-export is followed to the file that defines the name, so taking `Thing` through a
//!   `mod.rs` that re-exports it from a child is an edge to the child, not to the `mod.rs`.
//! - A name that cannot be found in the module a path reaches (made by a macro, say) counts as
//!   defined in that module's file.
//! - Importing a module (`use crate::b;`) is no edge by itself; the paths through it
//!   (`b::Thing`) are. A name that is both a module and an item is taken as the module.
//!   `mod b;` is no edge either: the parent owns its children, it does not import them.
//! - A glob (`use crate::b::*`) is an edge to `b`'s file.
//! - A one-segment macro call `name!` is an edge to the file with `macro_rules! name`.
//! - `#[cfg(test)]` items and modules, doc comments and strings are not read; macro arguments
//!   are read as expressions when they parse as such, and otherwise only their
//!   `crate::`/`super::`/`self::` paths are.
//! - Method calls (`x.f()`) are not seen: the type's import is.

use proc_macro2::{TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use syn::punctuated::Punctuated;
use syn::visit::Visit;

/// One module of the crate, inline or in a file of its own.
#[derive(Default)]
struct Module {
    file: usize,
    parent: Option<usize>,
    /// The directory its `mod x;` children are looked up in, relative to `src`.
    dir: String,
    children: HashMap<String, usize>,
    /// Names of items defined here (fns, types, consts, traits, macros).
    items: BTreeSet<String>,
    /// `use` names: the name, and the path as written.
    imports: HashMap<String, Vec<String>>,
    globs: Vec<Vec<String>>,
}

/// A path written in a file, to resolve once every module is known.
struct Mention {
    module: usize,
    path: Vec<String>,
    /// Written in a `use` (resolved as an import) rather than in code.
    import: bool,
}

/// Where a path leads.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Target {
    Module(usize),
    /// An item, by the file that defines it.
    Item(usize),
}

/// A crate: its files, its modules, and the import edges between files.
pub struct Graph {
    /// File paths as the report prints them.
    pub files: Vec<String>,
    modules: Vec<Module>,
    mentions: Vec<Mention>,
    /// `extern crate self as name;`: `name::` means `crate::`.
    self_aliases: BTreeSet<String>,
    /// File paths relative to `src`.
    paths: Vec<String>,
    /// `macro_rules!` names and the files that define them.
    macros: HashMap<String, BTreeSet<usize>>,
    /// `(from, to)` file edges and the names each takes.
    pub edges: BTreeMap<(usize, usize), BTreeSet<String>>,
}

/// A loop: files that reach each other, and the edges between them.
pub struct Cycle {
    /// Sorted.
    pub files: Vec<String>,
    /// `(from, to, names)`.
    pub edges: Vec<(String, String, String)>,
}

impl Cycle {
    /// The allowlist line: the files, sorted, separated by spaces.
    pub fn key(&self) -> String {
        self.files.join(" ")
    }

    /// One shortest way around the loop from its first file, for the report.
    pub fn shortest_loop(&self) -> Vec<(String, String, String)> {
        let start = &self.files[0];
        let mut previous: HashMap<&str, usize> = HashMap::new();
        let mut queue = std::collections::VecDeque::from([start.as_str()]);
        while let Some(at) = queue.pop_front() {
            for (index, (from, to, _)) in self.edges.iter().enumerate() {
                if from != at || previous.contains_key(to.as_str()) {
                    continue;
                }
                previous.insert(to, index);
                if to == start {
                    let mut path = Vec::new();
                    let mut node = start.as_str();
                    while let Some(&edge) = previous.get(node) {
                        path.push(self.edges[edge].clone());
                        node = &self.edges[edge].0;
                        if node == start {
                            break;
                        }
                    }
                    path.reverse();
                    return path;
                }
                queue.push_back(to);
            }
        }
        Vec::new()
    }
}

impl Graph {
    /// Reads the crate whose sources are in `src`, naming files with `prefix` before their path.
    pub fn load(src: &Path, prefix: &str) -> std::io::Result<Self> {
        let read = |relative: &str| std::fs::read_to_string(src.join(relative)).ok();
        let root = if src.join("lib.rs").exists() { "lib.rs" } else { "main.rs" };
        let mut graph = Self::build(root, prefix, read);
        if graph.files.is_empty() {
            return Err(std::io::Error::new(std::io::ErrorKind::NotFound, "no lib.rs or main.rs"));
        }
        graph.resolve();
        Ok(graph)
    }

    /// Reads a crate from sources in memory (`path -> text`, paths relative to `src`).
    pub fn from_sources(sources: &[(&str, &str)]) -> Self {
        let map: HashMap<&str, &str> = sources.iter().copied().collect();
        let mut graph = Self::build("lib.rs", "", |path| map.get(path).map(|s| (*s).to_owned()));
        graph.resolve();
        graph
    }

    fn build(root: &str, prefix: &str, read: impl Fn(&str) -> Option<String>) -> Self {
        let mut graph = Self {
            files: Vec::new(),
            modules: Vec::new(),
            mentions: Vec::new(),
            self_aliases: BTreeSet::new(),
            paths: Vec::new(),
            macros: HashMap::new(),
            edges: BTreeMap::new(),
        };
        // (candidate file paths, parent module and name) still to read.
        let mut pending: Vec<Pending> = vec![(vec![root.to_owned()], None)];
        while let Some((candidates, parent)) = pending.pop() {
            let Some((path, text)) = candidates.into_iter().find_map(|p| read(&p).map(|t| (p, t))) else { continue };
            let Ok(file) = syn::parse_file(&text) else { panic!("{prefix}{path} does not parse") };
            let file_index = graph.files.len();
            graph.files.push(format!("{prefix}{path}"));
            graph.paths.push(path.clone());
            let module = graph.modules.len();
            let dir = module_dir(&path);
            graph.modules.push(Module { file: file_index, dir, ..Module::default() });
            if let Some((parent, name)) = parent {
                graph.modules[module].parent = Some(parent);
                graph.modules[parent].children.insert(name, module);
            }
            let mut reader = Reader { graph: &mut graph, module, file: file_index, pending: Vec::new() };
            reader.items(&file.items);
            pending.extend(reader.pending);
        }
        graph
    }

    /// Resolves every mention to the file it reaches and records the edges.
    fn resolve(&mut self) {
        let mentions = std::mem::take(&mut self.mentions);
        for mention in &mentions {
            let from = self.modules[mention.module].file;
            let target = self.resolve_path(mention.module, &mention.path, 0, mention.import);
            let to = match target.map(|(target, _)| target) {
                Some(Target::Item(file)) => file,
                // A glob, or a path that stops at a module: a glob takes from the module's file.
                Some(Target::Module(module)) if mention.path.last().is_some_and(|s| s == "*") => {
                    self.modules[module].file
                }
                _ => continue,
            };
            if to != from {
                // The name the file takes: where its path reached an item (or the glob's module).
                let at = target.map_or(0, |(_, at)| at);
                let name = mention.path[..=at.min(mention.path.len() - 1)].iter().rev().find(|s| *s != "*");
                let name = name.cloned().unwrap_or_default();
                self.edges.entry((from, to)).or_default().insert(name);
            }
        }
        self.mentions = mentions;
    }

    /// Follows `path` as written in `module`. `depth` bounds re-export chains.
    /// Also gives the index of the segment the target was found at.
    fn resolve_path(&self, module: usize, path: &[String], depth: usize, import: bool) -> Option<(Target, usize)> {
        if depth > 16 || path.is_empty() {
            return None;
        }
        let (first, rest) = (path[0].as_str(), &path[1..]);
        let mut at = match first {
            "crate" => Target::Module(0),
            "self" => Target::Module(module),
            "super" => Target::Module(self.modules[module].parent?),
            "::" if rest.first().is_some_and(|s| self.self_aliases.contains(s)) => {
                let (target, at) = self.walk(Target::Module(0), &rest[1..], depth, import);
                return Some((target, at + 2));
            }
            name if self.self_aliases.contains(name) => Target::Module(0),
            name => self.lookup(module, name, !rest.is_empty() || import, depth)?,
        };
        // `super::super::x`
        let mut rest = rest;
        let mut skipped = 1;
        while let (Target::Module(m), Some("super")) = (at, rest.first().map(String::as_str)) {
            at = Target::Module(self.modules[m].parent?);
            rest = &rest[1..];
            skipped += 1;
        }
        if let Target::Item(_) = at {
            return Some((at, 0));
        }
        let (target, at) = self.walk(at, rest, depth, import);
        Some((target, at + skipped))
    }

    /// Follows `path` from `at`; the index is where the target was found, `path.len()` for a
    /// module reached at the end (so the caller's last segment).
    fn walk(&self, mut at: Target, path: &[String], depth: usize, import: bool) -> (Target, usize) {
        for (index, segment) in path.iter().enumerate() {
            let Target::Module(module) = at else { return (at, index.saturating_sub(1)) };
            if segment == "*" || segment == "self" {
                return (at, index.saturating_sub(1));
            }
            let more = index + 1 < path.len() || import;
            // A name the module does not show was made by a macro there: the module's file.
            at = self.lookup(module, segment, more, depth).unwrap_or(Target::Item(self.modules[module].file));
        }
        (at, path.len().saturating_sub(1))
    }

    /// The name `name` in `module`'s scope. `want_module`: a module of that name wins over an
    /// item of that name (the path goes on through it, or a `use` brings both).
    fn lookup(&self, module: usize, name: &str, want_module: bool, depth: usize) -> Option<Target> {
        let m = &self.modules[module];
        let child = m.children.get(name).map(|&c| Target::Module(c));
        if want_module && child.is_some() {
            return child;
        }
        if m.items.contains(name) {
            return Some(Target::Item(m.file));
        }
        if child.is_some() {
            return child;
        }
        if let Some(path) = m.imports.get(name) {
            return self.resolve_path(module, path, depth + 1, want_module).map(|(t, _)| t);
        }
        let from_glob = m.globs.iter().find_map(|glob| match self.resolve_path(module, glob, depth + 1, true) {
            Some((Target::Module(g), _)) if g != module => self.lookup(g, name, want_module, depth + 1),
            _ => None,
        });
        // `name!`, or an exported macro by path: the one file with `macro_rules! name`.
        from_glob.or_else(|| {
            let files = self.macros.get(name.trim_end_matches('!'))?;
            let file = *files.first()?;
            (files.len() == 1).then_some(Target::Item(file))
        })
    }

    /// Every loop: the strongly connected components of more than one file (Tarjan).
    pub fn cycles(&self) -> Vec<Cycle> {
        let n = self.files.len();
        let mut next: Vec<Vec<usize>> = vec![Vec::new(); n];
        for &(from, to) in self.edges.keys() {
            next[from].push(to);
        }
        let mut tarjan = Tarjan {
            next: &next,
            index: vec![None; n],
            low: vec![0; n],
            stack: Vec::new(),
            on_stack: vec![false; n],
            counter: 0,
            components: Vec::new(),
        };
        for v in 0..n {
            if tarjan.index[v].is_none() {
                tarjan.visit(v);
            }
        }
        let mut cycles: Vec<Cycle> = tarjan
            .components
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|component| {
                let inside: BTreeSet<usize> = component.iter().copied().collect();
                let mut files: Vec<String> = component.iter().map(|&f| self.files[f].clone()).collect();
                files.sort();
                let edges = self
                    .edges
                    .iter()
                    .filter(|((from, to), _)| inside.contains(from) && inside.contains(to))
                    .map(|((from, to), names)| {
                        let names: Vec<&str> = names.iter().map(String::as_str).collect();
                        (self.files[*from].clone(), self.files[*to].clone(), names.join(", "))
                    })
                    .collect();
                Cycle { files, edges }
            })
            .collect();
        cycles.sort_by_key(Cycle::key);
        cycles
    }

    /// The names file `from` takes from file `to`, both named as the report names them.
    pub fn edge(&self, from: &str, to: &str) -> Option<Vec<String>> {
        let from = self.files.iter().position(|f| f == from)?;
        let to = self.files.iter().position(|f| f == to)?;
        self.edges.get(&(from, to)).map(|names| names.iter().cloned().collect())
    }
}

struct Tarjan<'a> {
    next: &'a [Vec<usize>],
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    stack: Vec<usize>,
    on_stack: Vec<bool>,
    counter: usize,
    components: Vec<Vec<usize>>,
}

impl Tarjan<'_> {
    fn visit(&mut self, v: usize) {
        self.index[v] = Some(self.counter);
        self.low[v] = self.counter;
        self.counter += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for &w in &self.next[v] {
            match self.index[w] {
                None => {
                    self.visit(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(index) if self.on_stack[w] => self.low[v] = self.low[v].min(index),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut component = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            self.components.push(component);
        }
    }
}

/// The directory a module file's `mod x;` children live in: `a/mod.rs` and `lib.rs` -> their
/// own directory, `a/b.rs` -> `a/b/`.
fn module_dir(path: &str) -> String {
    let (dir, file) = path.rsplit_once('/').map_or(("", path), |(d, f)| (d, f));
    let join = |d: &str, name: &str| if d.is_empty() { name.to_owned() } else { format!("{d}/{name}") };
    match file {
        "mod.rs" | "lib.rs" | "main.rs" => dir.to_owned(),
        other => join(dir, other.trim_end_matches(".rs")),
    }
}

/// Whether `#[cfg(..)]` among `attrs` holds only in test builds.
fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| a.path().is_ident("cfg") && a.parse_args::<syn::Meta>().is_ok_and(|m| cfg_test(&m)))
}

fn cfg_test(meta: &syn::Meta) -> bool {
    let list = |m: &syn::MetaList| {
        m.parse_args_with(Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated)
            .map(|p| p.into_iter().collect::<Vec<_>>())
            .unwrap_or_default()
    };
    match meta {
        syn::Meta::Path(p) => p.is_ident("test"),
        syn::Meta::List(m) if m.path.is_ident("all") => list(m).iter().any(cfg_test),
        syn::Meta::List(m) if m.path.is_ident("any") => {
            let inner = list(m);
            !inner.is_empty() && inner.iter().all(cfg_test)
        }
        _ => false,
    }
}

/// A `mod x;` file to read: its candidate paths, and the parent module and name.
type Pending = (Vec<String>, Option<(usize, String)>);

/// Reads one file's items into the graph.
struct Reader<'g> {
    graph: &'g mut Graph,
    module: usize,
    file: usize,
    /// `mod x;` files to read.
    pending: Vec<Pending>,
}

impl Reader<'_> {
    fn items(&mut self, items: &[syn::Item]) {
        for item in items {
            self.visit_item(item);
        }
    }

    fn define(&mut self, name: String) {
        self.graph.modules[self.module].items.insert(name);
    }

    fn mention(&mut self, path: Vec<String>, import: bool) {
        self.graph.mentions.push(Mention { module: self.module, path, import });
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let name = n.ident.to_string();
                let mut path = prefix.clone();
                let local = if name == "self" { prefix.last().cloned().unwrap_or_default() } else { name.clone() };
                if name != "self" {
                    path.push(name);
                }
                self.import(local, path);
            }
            syn::UseTree::Rename(r) => {
                let mut path = prefix.clone();
                if r.ident != "self" {
                    path.push(r.ident.to_string());
                }
                self.import(r.rename.to_string(), path);
            }
            syn::UseTree::Glob(_) => {
                self.graph.modules[self.module].globs.push(prefix.clone());
                let mut path = prefix.clone();
                path.push("*".to_owned());
                self.mention(path, true);
            }
            syn::UseTree::Group(g) => {
                for tree in &g.items {
                    self.use_tree(prefix, tree);
                }
            }
        }
    }

    fn import(&mut self, local: String, path: Vec<String>) {
        if local != "_" {
            self.graph.modules[self.module].imports.insert(local, path.clone());
        }
        self.mention(path, true);
    }

    /// `mod name;` or `mod name { .. }`.
    fn module(&mut self, item: &syn::ItemMod) {
        let name = item.ident.to_string();
        let here = self.module;
        let parent_dir = self.graph.modules[here].dir.clone();
        let join = |d: &str, n: &str| if d.is_empty() { n.to_owned() } else { format!("{d}/{n}") };
        if let Some((_, items)) = &item.content {
            let child = self.graph.modules.len();
            let dir = join(&parent_dir, &name);
            self.graph.modules.push(Module { file: self.file, parent: Some(here), dir, ..Module::default() });
            self.graph.modules[here].children.insert(name, child);
            self.module = child;
            self.items(items);
            self.module = here;
            return;
        }
        let explicit = item.attrs.iter().find(|a| a.path().is_ident("path")).and_then(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        });
        let candidates = match explicit {
            // `#[path]` is relative to the directory of the file that holds the declaration.
            Some(p) => {
                let file_dir = self.graph.paths[self.file].rsplit_once('/').map_or("", |(d, _)| d).to_owned();
                vec![join(&file_dir, &p)]
            }
            None => vec![join(&parent_dir, &format!("{name}.rs")), join(&parent_dir, &format!("{name}/mod.rs"))],
        };
        self.pending.push((candidates, Some((here, name))));
    }
}

impl<'ast> Visit<'ast> for Reader<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs: &[syn::Attribute] = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Const(c) => &c.attrs,
            syn::Item::Static(s) => &s.attrs,
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Enum(e) => &e.attrs,
            syn::Item::Trait(t) => &t.attrs,
            syn::Item::Type(t) => &t.attrs,
            syn::Item::Macro(m) => &m.attrs,
            _ => &[],
        };
        if test_only(attrs) {
            return;
        }
        let name = match item {
            syn::Item::Fn(f) => Some(&f.sig.ident),
            syn::Item::Const(c) => Some(&c.ident),
            syn::Item::Static(s) => Some(&s.ident),
            syn::Item::Struct(s) => Some(&s.ident),
            syn::Item::Enum(e) => Some(&e.ident),
            syn::Item::Union(u) => Some(&u.ident),
            syn::Item::Trait(t) => Some(&t.ident),
            syn::Item::TraitAlias(t) => Some(&t.ident),
            syn::Item::Type(t) => Some(&t.ident),
            _ => None,
        };
        if let syn::Item::Macro(syn::ItemMacro { ident: Some(name), .. }) = item {
            self.graph.macros.entry(name.to_string()).or_default().insert(self.file);
        }
        if let Some(name) = name {
            self.define(name.to_string());
        }
        match item {
            syn::Item::Mod(m) => self.module(m),
            syn::Item::Use(u) => {
                let mut prefix = if u.leading_colon.is_some() { vec!["::".to_owned()] } else { Vec::new() };
                self.use_tree(&mut prefix, &u.tree);
            }
            syn::Item::ExternCrate(e) if e.ident == "self" => {
                if let Some((_, alias)) = &e.rename {
                    self.graph.self_aliases.insert(alias.to_string());
                }
            }
            other => syn::visit::visit_item(self, other),
        }
    }

    fn visit_attribute(&mut self, _: &'ast syn::Attribute) {
        // Doc comments and attribute arguments name no code this file runs.
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1 || path.leading_colon.is_some() {
            let mut written = if path.leading_colon.is_some() { vec!["::".to_owned()] } else { Vec::new() };
            written.extend(segments);
            self.mention(written, false);
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        if let Some(name) = mac.path.get_ident() {
            self.mention(vec![format!("{name}!")], false);
        }
        let parser = Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated;
        match syn::parse::Parser::parse2(parser, mac.tokens.clone()) {
            Ok(args) => args.iter().for_each(|arg| self.visit_expr(arg)),
            Err(_) => self.scan(mac.tokens.clone()),
        }
    }
}

impl Reader<'_> {
    /// `crate::a::b`, `super::a` and `self::a` sequences in tokens that are not expressions.
    fn scan(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            match &trees[i] {
                TokenTree::Group(g) => self.scan(g.stream()),
                TokenTree::Ident(id) if matches!(id.to_string().as_str(), "crate" | "super" | "self") => {
                    let mut path = vec![id.to_string()];
                    while let [TokenTree::Punct(a), TokenTree::Punct(b), TokenTree::Ident(next), ..] = &trees[i + 1..]
                        && a.as_char() == ':'
                        && b.as_char() == ':'
                    {
                        path.push(next.to_string());
                        i += 3;
                    }
                    if path.len() > 1 {
                        self.mention(path, false);
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
}
