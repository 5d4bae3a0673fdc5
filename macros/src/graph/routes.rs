//! Routes a node returns but did not declare: `StartNext::B` where the node says
//! `next = a | END` and the graph has a node `b`.
//!
//! rustc alone would answer "no variant `B`; did you mean `A`?", which suggests the wrong fix:
//! the user meant to route to `b` and has to add it to `next`. The macro sees every path
//! written in the module, so it finds these, says so under the variant, and adds the variant to
//! the generated enum (in a graph that does not compile anyway) so rustc does not report it a
//! second time. A variant that names no node at all is left to rustc's "no variant" error.

use super::case::pascal;
use super::ir::{GraphDef, NodeDef};
use crate::ctxt::Ctxt;
use proc_macro2::{Ident, Spacing, TokenStream, TokenTree};
use quote::ToTokens;

/// Rule: a node routes only to the targets its `next = a | b` lists. Records an error under
/// each `{Node}Next::Variant` written in the module whose variant names another node of the
/// graph (or END) but not one of the node's targets, and keeps those variants on the node so
/// that codegen declares them.
pub(crate) fn check_undeclared_routes(cx: &mut Ctxt, def: &mut GraphDef) {
    let Some((_, items)) = &def.module.content else { return };
    let mut paths = Vec::new();
    for item in items {
        enum_paths(item.to_token_stream(), &mut paths);
    }
    let graph_targets: Vec<String> =
        def.nodes.iter().map(NodeDef::name).chain([graphwright_wiring::END.to_owned()]).collect();
    for index in 0..def.nodes.len() {
        let node = &def.nodes[index];
        let Some(targets) = node.next.as_ref().filter(|t| t.alternatives) else { continue };
        let route_enum = format!("{}Next", pascal(&node.name()));
        let declared: Vec<String> = targets.names.iter().map(|t| pascal(&t.to_string())).collect();
        let mut undeclared: Vec<Ident> = Vec::new();
        for (enum_name, variant) in &paths {
            let variant_name = variant.to_string();
            if *enum_name != route_enum || declared.contains(&variant_name) {
                continue;
            }
            let Some(target) = graph_targets.iter().find(|t| pascal(t) == variant_name) else { continue };
            let written: Vec<String> = targets.names.iter().map(ToString::to_string).collect();
            let mut fixed = written.clone();
            let before_end = fixed.iter().position(|t| t == graphwright_wiring::END).unwrap_or(fixed.len());
            fixed.insert(before_end, target.clone());
            cx.error_spanned_by(
                variant,
                format!(
                    "node `{}` cannot route to `{target}`, which its `next = {}` does not list: write `next = {}`",
                    node.name(),
                    written.join(" | "),
                    fixed.join(" | "),
                ),
            );
            if !undeclared.iter().any(|v| v == variant) {
                undeclared.push(variant.clone());
            }
        }
        def.nodes[index].undeclared_routes = undeclared;
    }
}

/// Every `Enum::Variant` pair of identifiers in `tokens`, macro arguments included.
fn enum_paths(tokens: TokenStream, out: &mut Vec<(String, Ident)>) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, tree) in trees.iter().enumerate() {
        if let TokenTree::Group(group) = tree {
            enum_paths(group.stream(), out);
            continue;
        }
        if let [TokenTree::Ident(ty), TokenTree::Punct(first), TokenTree::Punct(second), TokenTree::Ident(variant), ..] =
            &trees[i..]
            && first.as_char() == ':'
            && first.spacing() == Spacing::Joint
            && second.as_char() == ':'
        {
            out.push((ty.to_string(), variant.clone()));
        }
    }
}
