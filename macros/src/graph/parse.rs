//! Parsing a `#[graph]` module: its arguments, its `#[state]` struct and its `#[node]` fns.

use super::start::StartDef;
use crate::ctxt::Ctxt;
use crate::state::{self, StateDef};
use proc_macro2::{Span, TokenStream};
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{Expr, FnArg, Ident, Item, ItemFn, ItemMod, Pat, Path, ReturnType, Token, Type, bracketed};

/// The options a `#[node(..)]` attribute accepts, for suggestions.
const NODE_OPTIONS: &[&str] =
    &["entry", "next", "send", "route", "join", "defer", "retry", "timeout", "cache", "subgraph"];

/// `#[graph(context = Ctx, state = Path)]`.
#[derive(Default)]
pub(crate) struct GraphArgs {
    pub(crate) context: Option<Type>,
    pub(crate) state: Option<Path>,
}

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

/// Where an edge list was written, and its targets as written.
pub(crate) struct Targets {
    /// The key the list was written under (`next` or `send`), for the generated enum's span.
    pub(crate) key: Span,
    pub(crate) names: Vec<Ident>,
    /// `a | b`: alternatives (a branch), rather than `a` or `[a, b]` (static edges).
    pub(crate) alternatives: bool,
}

/// A parsed `#[node(..)]` fn.
pub(crate) struct NodeDef {
    pub(crate) item: ItemFn,
    pub(crate) entry: bool,
    pub(crate) next: Option<Targets>,
    pub(crate) send: Option<Targets>,
    pub(crate) route: Option<Path>,
    pub(crate) join: bool,
    pub(crate) defer: bool,
    /// `subgraph`: the fn returns a graph (a builder or a compiled graph) that runs as the node.
    pub(crate) subgraph: Option<Ident>,
    pub(crate) retry: Option<Expr>,
    pub(crate) timeout: Option<Expr>,
    /// `cache = policy`: the node's outputs are cached under a `CachePolicy`.
    pub(crate) cache: Option<Expr>,
    pub(crate) params: Vec<Param>,
    /// Variants of `{Node}Next` the module's code names but `next` does not declare (each
    /// already reported); the enum declares them too, so rustc does not report them again.
    pub(crate) undeclared_routes: Vec<Ident>,
    /// The `#[node(..)]` attribute as written, for errors about the node as a whole.
    pub(crate) attr: TokenStream,
}

impl NodeDef {
    pub(crate) fn name(&self) -> String {
        self.item.sig.ident.to_string()
    }

    pub(crate) fn ident(&self) -> &Ident {
        &self.item.sig.ident
    }

    /// Whether the node runs as an async node (a subgraph always does).
    pub(crate) fn is_async(&self) -> bool {
        self.item.sig.asyncness.is_some() || self.subgraph.is_some()
    }

    /// `next = a | b` without a router: the node returns the route.
    pub(crate) fn returns_route(&self) -> bool {
        self.branches() && self.route.is_none()
    }

    pub(crate) fn branches(&self) -> bool {
        self.next.as_ref().is_some_and(|t| t.alternatives)
    }

    /// The payload type, if the node takes a Send payload.
    pub(crate) fn payload(&self) -> Option<&Type> {
        self.params.iter().find_map(|p| match p {
            Param::Payload(ty) => Some(&**ty),
            _ => None,
        })
    }

    pub(crate) fn return_span(&self) -> Span {
        match &self.item.sig.output {
            ReturnType::Type(_, ty) => syn::spanned::Spanned::span(&**ty),
            ReturnType::Default => self.item.sig.ident.span(),
        }
    }
}

/// A node parameter, by what the runtime injects into it.
pub(crate) enum Param {
    State,
    Runtime,
    /// `&P`: the Send payload.
    Payload(Box<Type>),
}

/// The module's pieces.
pub(crate) struct GraphDef {
    pub(crate) module: ItemMod,
    pub(crate) state: Option<StateDef>,
    pub(crate) nodes: Vec<NodeDef>,
    /// `#[start]` fns: a router or Sends from START.
    pub(crate) starts: Vec<StartDef>,
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
                    starts.push(super::start::parse(cx, &attr, f.clone()));
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
pub(crate) fn parse_targets(input: ParseStream<'_>, key: Span) -> syn::Result<Targets> {
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
