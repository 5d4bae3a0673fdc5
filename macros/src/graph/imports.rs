//! The module's glob imports, which `#[graph]` itself can leave unused.
//!
//! The recommended module starts with `use super::*;`, which brings `#[state]`, `#[node]` and
//! the prelude into the module. `#[graph]` reads and removes those markers before rustc
//! resolves them, and its generated code names everything by absolute path; in a module whose
//! own code names nothing from outside, the glob is then reported as unused (and clippy's
//! `wildcard_imports` asks to list what it imports, which is nothing). The import is still
//! what makes the module read as ordinary Rust, so the macro allows these two lints on it.

use syn::{Item, UseTree};

/// Adds `#[allow(unused_imports)]` to each glob `use` of the module, and also
/// `#[allow(clippy::wildcard_imports)]` to `use super::*;`. Expands, for the recommended
/// form, to:
///
/// ```text
/// #[allow(unused_imports, clippy::wildcard_imports)]
/// use super::*;
/// ```
pub(crate) fn allow_unused_globs(items: &mut [Item]) {
    for item in items {
        let Item::Use(import) = item else { continue };
        let allow: syn::Attribute = match glob_kind(&import.tree) {
            Some(Glob::Super) => syn::parse_quote!(#[allow(unused_imports, clippy::wildcard_imports)]),
            Some(Glob::Other) => syn::parse_quote!(#[allow(unused_imports)]),
            None => continue,
        };
        import.attrs.push(allow);
    }
}

enum Glob {
    /// `use super::*;`
    Super,
    /// Any other path ending in `*`, such as `use graphwright::prelude::*;`.
    Other,
}

fn glob_kind(tree: &UseTree) -> Option<Glob> {
    match tree {
        UseTree::Path(path) if path.ident == "super" && matches!(*path.tree, UseTree::Glob(_)) => Some(Glob::Super),
        UseTree::Path(path) => glob_kind(&path.tree).map(|_| Glob::Other),
        UseTree::Glob(_) => Some(Glob::Other),
        _ => None,
    }
}
