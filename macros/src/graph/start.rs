//! `#[start]` fns: a conditional entry (LangGraph's conditional edges from START).
//!
//! `#[start(next = a | b)] fn pick(state: &State) -> StartNext` reads the run's input and picks
//! the first node; `#[start(send = worker)] fn split(state: &State) -> Vec<Job>` starts `worker`
//! once per payload. Both run on the state after the input, beside the `#[node(entry)]` nodes.
//!
//! The items codegen adds for them: the router's `StartNext` enum and the builder calls. Their
//! attributes are read by `parse` and their rules are in `check`.

use super::case::pascal;
use super::ir::GraphDef;
use crate::paths::private;
use proc_macro2::{Ident, TokenStream};
use quote::{quote, quote_spanned};

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
