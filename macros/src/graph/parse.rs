//! Parsing a `#[graph]` module: its arguments, its `#[state]` struct, its `#[node]` fns and its
//! `#[start]` fns, into the types of `ir`.

use super::ir::{GraphArgs, GraphDef, NodeDef, Param, StartDef, Targets};
use crate::ctxt::Ctxt;
use crate::state::{self, StateDef};
use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{Expr, FnArg, Ident, Item, ItemFn, ItemMod, Pat, Path, Token, Type, bracketed};

/// The options a `#[node(..)]` attribute accepts, for suggestions.
const NODE_OPTIONS: &[&str] =
    &["entry", "next", "send", "route", "join", "defer", "retry", "timeout", "cache", "subgraph"];

/// Parses the arguments of `#[graph(..)]`.
pub(crate) fn parse_args(cx: &mut Ctxt, args: TokenStream) -> GraphArgs {
    let mut out = GraphArgs::default();
    match Punctuated::<GraphArg, Token![,]>::parse_terminated.parse2(args) {
        Ok(pairs) => {
            for GraphArg { key, value } in pairs {
                if key == "context" {
                    match syn::parse2::<Type>(value) {
                        Ok(ty) => out.context = Some(ty),
                        Err(e) => cx.push(e),
                    }
                } else if key == "state" {
                    match syn::parse2::<Path>(value.clone()) {
                        Ok(path) => out.state = Some(path),
                        Err(_) => cx.error_spanned_by(value, "`state = ..` takes the path of a `#[state]` struct"),
                    }
                } else {
                    unknown_graph_option(cx, &key.into());
                }
            }
        }
        Err(e) => cx.push(e),
    }
    out
}

/// `key = value` in `#[graph(..)]`, the value kept as tokens up to the next top-level comma
/// (a type such as `Arc<Ctx>` is not an expression, so `MetaNameValue` cannot hold it).
struct GraphArg {
    key: Ident,
    value: TokenStream,
}

impl Parse for GraphArg {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let key: Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        let mut value = TokenStream::new();
        let mut depth = 0_usize;
        while !input.is_empty() && (depth != 0 || !input.peek(Token![,])) {
            let tree: proc_macro2::TokenTree = input.parse()?;
            if let proc_macro2::TokenTree::Punct(p) = &tree {
                match p.as_char() {
                    '<' => depth += 1,
                    '>' => depth = depth.saturating_sub(1),
                    _ => {}
                }
            }
            value.extend([tree]);
        }
        if value.is_empty() {
            return Err(input.error(format!("`{key}` takes a value: `{key} = ..`")));
        }
        Ok(Self { key, value })
    }
}

/// Rule: `#[graph(..)]` takes `context = Type` and `state = Path`, nothing else.
fn unknown_graph_option(cx: &mut Ctxt, path: &Path) {
    let name = quote::ToTokens::to_token_stream(path).to_string().replace(' ', "");
    let hint = graphwright_wiring::closest(&name, ["context", "state"])
        .map(|near| format!("; did you mean `{near}`?"))
        .unwrap_or_default();
    cx.error_spanned_by(
        path,
        format!("unknown graph option `{name}`{hint} (options: `context = Type`, `state = Path`)"),
    );
}

/// Reads the module, stripping `#[state]` and `#[node]` markers from its items. The state
/// struct is taken out of the module (codegen puts its expansion back); node fns stay.
pub(crate) fn parse_module(cx: &mut Ctxt, mut module: ItemMod, state_path: Option<&Path>) -> GraphDef {
    let mut state = None;
    let mut nodes = Vec::new();
    let mut starts = Vec::new();
    let Some((_, items)) = &mut module.content else {
        cx.error_spanned_by(
            &module,
            "`#[graph]` needs the module's items inline: write `mod name { .. }`, not `mod name;`",
        );
        return GraphDef { module, state, nodes, starts };
    };
    let mut kept = Vec::with_capacity(items.len());
    for item in std::mem::take(items) {
        match item {
            Item::Struct(mut s) if has_marker(&s.attrs, "state") => {
                take_marker(&mut s.attrs, "state");
                if let Some(first) = &state {
                    let first: &StateDef = first;
                    cx.error_spanned_by(
                        &s.ident,
                        format!(
                            "a graph has one `#[state]` struct, and `{}` is it: move these fields into it",
                            first.item.ident
                        ),
                    );
                    kept.push(Item::Struct(s));
                } else {
                    state = Some(state::parse(cx, s));
                }
            }
            Item::Fn(mut f) => {
                if let Some(attr) = take_marker(&mut f.attrs, "node") {
                    nodes.push(parse_node(cx, &attr, f.clone()));
                } else if let Some(attr) = take_marker(&mut f.attrs, "start") {
                    starts.push(parse_start(cx, &attr, f.clone()));
                }
                kept.push(Item::Fn(f));
            }
            other => kept.push(other),
        }
    }
    *items = kept;
    // The state is the inline `#[state]` struct, or the one `#[graph(state = path)]` names.
    let state_name = state
        .as_ref()
        .map(|s| s.item.ident.to_string())
        .or_else(|| state_path.and_then(|p| p.segments.last()).map(|s| s.ident.to_string()));
    for node in &mut nodes {
        node.params = parse_params(cx, &node.item, state_name.as_deref());
    }
    GraphDef { module, state, nodes, starts }
}

fn has_marker(attrs: &[syn::Attribute], name: &str) -> bool {
    attrs.iter().any(|a| a.path().segments.last().is_some_and(|s| s.ident == name))
}

/// Removes the attribute `#[name]` or `#[name(..)]` (also written `#[graphwright::name]`).
fn take_marker(attrs: &mut Vec<syn::Attribute>, name: &str) -> Option<syn::Attribute> {
    let position = attrs.iter().position(|a| a.path().segments.last().is_some_and(|s| s.ident == name))?;
    Some(attrs.remove(position))
}

/// One `key` or `key = value` inside `#[node(..)]`.
enum NodeArg {
    Flag(Ident),
    Targets(Ident, Targets),
    Path(Ident, Path),
    Expr(Ident, Expr),
}

impl Parse for NodeArg {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let key: Ident = input.call(syn::ext::IdentExt::parse_any)?;
        if !input.peek(Token![=]) {
            return Ok(Self::Flag(key));
        }
        input.parse::<Token![=]>()?;
        match key.to_string().as_str() {
            "next" | "send" => Ok(Self::Targets(key.clone(), parse_targets(input, key.span())?)),
            "route" => Ok(Self::Path(key, input.parse()?)),
            _ => Ok(Self::Expr(key, input.parse()?)),
        }
    }
}

/// `a`, `a | b | END`, or `[a, b]`.
fn parse_targets(input: ParseStream<'_>, key: Span) -> syn::Result<Targets> {
    if input.peek(syn::token::Bracket) {
        let content;
        bracketed!(content in input);
        let names = Punctuated::<Ident, Token![,]>::parse_terminated(&content)?;
        if names.is_empty() {
            return Err(content.error("list at least one target inside `[..]`"));
        }
        return Ok(Targets { key, names: names.into_iter().collect(), alternatives: false });
    }
    let names = Punctuated::<Ident, Token![|]>::parse_separated_nonempty(input)?;
    let alternatives = names.len() > 1;
    Ok(Targets { key, names: names.into_iter().collect(), alternatives })
}

/// One `key = targets` inside `#[start(..)]`.
struct StartArg {
    key: Ident,
    targets: Targets,
}

impl Parse for StartArg {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let key: Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        let targets = parse_targets(input, key.span())?;
        Ok(Self { key, targets })
    }
}

/// Reads `#[start(next = a | b)]` or `#[start(send = worker)]`.
fn parse_start(cx: &mut Ctxt, attr: &syn::Attribute, item: ItemFn) -> StartDef {
    let mut def = StartDef { item, next: None, send: None, attr: attr.to_token_stream() };
    let syn::Meta::List(list) = &attr.meta else {
        cx.error_spanned_by(attr, "say where a run starts: `#[start(next = a | b)]` or `#[start(send = worker)]`");
        return def;
    };
    let args = match list.parse_args_with(Punctuated::<StartArg, Token![,]>::parse_terminated) {
        Ok(args) => args,
        Err(e) => {
            cx.push(e);
            return def;
        }
    };
    for StartArg { key, targets } in args {
        let slot = match key.to_string().as_str() {
            "next" => &mut def.next,
            "send" => &mut def.send,
            _ => {
                cx.error_spanned_by(
                    &key,
                    format!("unknown start option `{key}` (options: `next = a | b`, `send = ..`)"),
                );
                continue;
            }
        };
        if slot.is_some() {
            cx.error_spanned_by(&key, format!("`{key}` is given twice"));
        }
        *slot = Some(targets);
    }
    def
}

fn parse_node(cx: &mut Ctxt, attr: &syn::Attribute, item: ItemFn) -> NodeDef {
    let mut node = NodeDef {
        item,
        entry: false,
        next: None,
        send: None,
        route: None,
        join: false,
        defer: false,
        subgraph: None,
        retry: None,
        timeout: None,
        cache: None,
        params: Vec::new(),
        undeclared_routes: Vec::new(),
        attr: quote::ToTokens::to_token_stream(attr),
    };
    let args = match &attr.meta {
        syn::Meta::Path(_) => Punctuated::new(),
        syn::Meta::List(list) => match list.parse_args_with(Punctuated::<NodeArg, Token![,]>::parse_terminated) {
            Ok(args) => args,
            Err(e) => {
                cx.push(e);
                return node;
            }
        },
        syn::Meta::NameValue(nv) => {
            cx.error_spanned_by(nv, "write node options in parentheses: `#[node(next = ..)]`");
            return node;
        }
    };
    for arg in args {
        match arg {
            NodeArg::Flag(key) if key == "entry" => node.entry = true,
            NodeArg::Flag(key) if key == "join" => node.join = true,
            NodeArg::Flag(key) if key == "defer" => node.defer = true,
            NodeArg::Flag(key) if key == "subgraph" => node.subgraph = Some(key),
            NodeArg::Targets(key, targets) if key == "next" => set_once(cx, &key, &mut node.next, targets),
            NodeArg::Targets(key, targets) => set_once(cx, &key, &mut node.send, targets),
            NodeArg::Path(key, path) => set_once(cx, &key, &mut node.route, path),
            NodeArg::Expr(key, expr) if key == "retry" => set_once(cx, &key, &mut node.retry, expr),
            NodeArg::Expr(key, expr) if key == "timeout" => set_once(cx, &key, &mut node.timeout, expr),
            NodeArg::Expr(key, expr) if key == "cache" => set_once(cx, &key, &mut node.cache, expr),
            NodeArg::Flag(key) | NodeArg::Expr(key, _) => unknown_option(cx, &key),
        }
    }
    node
}

fn set_once<T>(cx: &mut Ctxt, key: &Ident, slot: &mut Option<T>, value: T) {
    if slot.is_some() {
        cx.error_spanned_by(key, format!("`{key}` is given twice"));
    }
    *slot = Some(value);
}

fn unknown_option(cx: &mut Ctxt, key: &Ident) {
    let name = key.to_string();
    let hint = match graphwright_wiring::closest(&name, NODE_OPTIONS.iter().copied()) {
        Some(near) => format!("; did you mean `{near}`?"),
        None => String::new(),
    };
    let takes = if matches!(name.as_str(), "next" | "send" | "route" | "retry" | "timeout" | "cache") {
        format!("`{name}` takes a value: `{name} = ..`")
    } else {
        format!("unknown node option `{name}`{hint}")
    };
    cx.error_spanned_by(
        key,
        format!("{takes} (options: `entry`, `next = ..`, `send = ..`, `route = fn`, `join`, `defer`, `subgraph`, `retry = ..`, `timeout = ..`, `cache = ..`)"),
    );
}

/// Classifies each parameter: `&State`, `&Runtime<..>`, or (first, for a Send target) `&P`.
fn parse_params(cx: &mut Ctxt, item: &ItemFn, state: Option<&str>) -> Vec<Param> {
    let mut params = Vec::new();
    for (i, input) in item.sig.inputs.iter().enumerate() {
        let FnArg::Typed(typed) = input else {
            cx.error_spanned_by(input, "a node is a free fn: it cannot take `self`");
            continue;
        };
        if !matches!(*typed.pat, Pat::Ident(_) | Pat::Wild(_)) {
            cx.error_spanned_by(&typed.pat, "name this parameter (patterns are not supported here)");
        }
        let Type::Reference(reference) = &*typed.ty else {
            cx.error_spanned_by(&typed.ty, injectable_message());
            continue;
        };
        if reference.mutability.is_some() {
            cx.error_spanned_by(
                &typed.ty,
                "nodes read the state, they do not change it: take `&State` and return an update",
            );
            continue;
        }
        match last_ident(&reference.elem) {
            Some(name) if Some(name.as_str()) == state || name == "Self" => params.push(Param::State),
            Some(name) if name == "Runtime" => params.push(Param::Runtime),
            _ if i == 0 => params.push(Param::Payload(reference.elem.clone())),
            _ => cx.error_spanned_by(&typed.ty, injectable_message()),
        }
    }
    params
}

fn injectable_message() -> String {
    "this parameter can't be injected; expected `&State` or `&Runtime<..>` (a Send target may take its payload `&P` first)".to_owned()
}

fn last_ident(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}
