//! `#[start]` fns: a conditional entry (LangGraph's conditional edges from START).
//!
//! `#[start(next = a | b)] fn pick(state: &State) -> StartNext` reads the run's input and picks
//! the first node; `#[start(send = worker)] fn split(state: &State) -> Vec<Job>` starts `worker`
//! once per payload. Both run on the state after the input, beside the `#[node(entry)]` nodes.

use super::codegen::pascal;
use super::parse::{GraphDef, Targets, parse_targets};
use crate::ctxt::Ctxt;
use crate::paths::private;
use proc_macro2::TokenStream;
use quote::{ToTokens, quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{FnArg, Ident, ItemFn, Token};

/// A parsed `#[start(..)]` fn.
pub(crate) struct StartDef {
    pub(crate) item: ItemFn,
    /// `next = a | b`: a router from START.
    pub(crate) next: Option<Targets>,
    /// `send = worker`: Sends from START.
    pub(crate) send: Option<Targets>,
    /// The attribute as written, for errors about it as a whole.
    pub(crate) attr: TokenStream,
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
pub(crate) fn parse(cx: &mut Ctxt, attr: &syn::Attribute, item: ItemFn) -> StartDef {
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

/// The rules of `#[start]` fns: one of `next` (with alternatives) or `send` (one target), names
/// that exist, a router that leads to nodes, a sync fn reading the state.
pub(crate) fn check(cx: &mut Ctxt, def: &GraphDef) {
    let names: Vec<String> = def.nodes.iter().map(super::parse::NodeDef::name).collect();
    let mut routers = 0;
    for start in &def.starts {
        let fn_name = &start.item.sig.ident;
        match (&start.next, &start.send) {
            (Some(_), Some(send)) => cx.error_spanned_by(
                &send.names[0],
                format!("`{fn_name}` both routes and sends from START: split it into two `#[start]` fns"),
            ),
            (None, None) => {
                cx.error_spanned_by(&start.attr, "say where a run starts: `next = a | b` or `send = worker`");
            }
            (Some(next), None) if !next.alternatives => cx.error_spanned_by(
                &next.names[0],
                format!("a start with one target is an entry: mark `{}` with `#[node(entry)]`", next.names[0]),
            ),
            (Some(_), None) => routers += 1,
            (None, Some(send)) if send.names.len() > 1 => {
                cx.error_spanned_by(&send.names[1], "a `#[start]` fn sends to one node: write one fn per target");
            }
            (None, Some(_)) => {}
        }
        if routers > 1 && start.next.is_some() {
            cx.error_spanned_by(fn_name, "a graph has one `#[start(next = ..)]` router: merge the two");
        }
        for target in start.next.iter().chain(&start.send).flat_map(|t| &t.names) {
            let name = target.to_string();
            if name == graphwright_wiring::END {
                cx.error_spanned_by(target, "a run cannot start at END: name the nodes it may start at");
            } else if !names.contains(&name) {
                let hint = graphwright_wiring::closest(&name, names.iter().map(String::as_str))
                    .map(|near| format!("; did you mean `{near}`?"))
                    .unwrap_or_default();
                cx.error_spanned_by(target, format!("no node named `{name}` in graph `{}`{hint}", def.module.ident));
            }
        }
        if start.item.sig.asyncness.is_some() {
            cx.error_spanned_by(
                start.item.sig.asyncness,
                "a `#[start]` fn decides where a run starts: make it a sync fn",
            );
        }
        if start.item.sig.inputs.len() != 1 || !matches!(start.item.sig.inputs.first(), Some(FnArg::Typed(_))) {
            cx.error_spanned_by(
                &start.item.sig.inputs,
                format!("`{fn_name}` takes the state: `{fn_name}(state: &State)`"),
            );
        }
    }
}

/// The nodes a run may start at through `#[start]` fns.
pub(crate) fn entries(def: &GraphDef) -> Vec<String> {
    def.starts
        .iter()
        .flat_map(|s| s.next.iter().chain(&s.send))
        .flat_map(|t| t.names.iter().map(ToString::to_string))
        .collect()
}

/// The nodes `#[start(send = ..)]` fns send to.
pub(crate) fn sent_to(def: &GraphDef) -> impl Iterator<Item = String> + '_ {
    def.starts.iter().filter_map(|s| s.send.as_ref()).flat_map(|t| t.names.iter().map(ToString::to_string))
}

/// `pub enum StartNext { A, B }` with its `Route` impl, for the router from START.
pub(crate) fn start_enum(def: &GraphDef, state: &TokenStream) -> TokenStream {
    let Some(targets) = def.starts.iter().find_map(|s| s.next.as_ref().filter(|t| t.alternatives)) else {
        return TokenStream::new();
    };
    let p = private();
    let variants: Vec<Ident> = targets.names.iter().map(|t| Ident::new(&pascal(&t.to_string()), t.span())).collect();
    let strings: Vec<String> = targets.names.iter().map(ToString::to_string).collect();
    let indices = 0..variants.len();
    let docs = strings.iter().map(|t| format!("Start at `{t}`."));
    let body = quote!(#( #[doc = #docs] #variants, )*);
    let definition = quote_spanned!(targets.key=> pub enum StartNext { #body });
    quote! {
        /// Where a run starts, as the `#[start]` router picks it.
        #[allow(dead_code)]
        #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug,
                 ::core::cmp::PartialEq, ::core::cmp::Eq, ::core::hash::Hash)]
        #definition

        #[automatically_derived]
        impl #p::Route for StartNext {
            type State = #state;
            const TARGETS: &'static [&'static str] = &[#(#strings),*];

            fn index(&self) -> usize {
                match self { #( StartNext::#variants => #indices, )* }
            }
        }
    }
}

/// The builder calls of the `#[start]` fns: `.add_router("START", pick)` and
/// `.add_start_send("worker", split)`.
pub(crate) fn builder_calls(def: &GraphDef) -> Vec<TokenStream> {
    let mut calls = Vec::new();
    for start in &def.starts {
        let f = &start.item.sig.ident;
        if start.next.is_some() {
            calls.push(quote_spanned!(f.span()=> .add_router("START", #f)));
        }
        if let Some(send) = &start.send {
            let target = send.names[0].to_string();
            calls.push(quote_spanned!(f.span()=> .add_start_send(#target, #f)));
        }
    }
    calls
}
