//! The attribute macros of [graphwright](https://docs.rs/graphwright): `#[graph]`, `#[state]`,
//! `#[node]` and `#[tool]`. Depend on `graphwright`, which re-exports them; the docs with examples are
//! on the re-exports.

mod ctxt;
mod functional;
mod graph;
mod paths;
mod state;
mod tool;

use proc_macro::TokenStream;

/// Turns an inline module of `#[state]` and `#[node]` items into a checked graph.
///
/// See [`graphwright::graph`](https://docs.rs/graphwright/latest/graphwright/attr.graph.html).
#[proc_macro_attribute]
pub fn graph(args: TokenStream, input: TokenStream) -> TokenStream {
    graph::expand(args.into(), &input.into()).into()
}

/// Generates the update type and reducer wiring of a state struct.
///
/// See [`graphwright::state`](https://docs.rs/graphwright/latest/graphwright/attr.state.html).
#[proc_macro_attribute]
pub fn state(args: TokenStream, input: TokenStream) -> TokenStream {
    state::expand_attribute(&args.into(), &input.into()).into()
}

/// Marks a fn as a node of the enclosing `#[graph]` module.
///
/// See [`graphwright::node`](https://docs.rs/graphwright/latest/graphwright/attr.node.html).
#[proc_macro_attribute]
pub fn node(_args: TokenStream, input: TokenStream) -> TokenStream {
    let input: proc_macro2::TokenStream = input.into();
    let error = syn::Error::new(
        proc_macro2::Span::call_site(),
        "`#[node]` marks a fn inside a `#[graph]` module: put it in `#[graph] mod name { .. }`",
    )
    .to_compile_error();
    quote::quote!(#error #input).into()
}

/// Marks a fn of the enclosing `#[graph]` module as a conditional entry: a router from START
/// (`next = a | b`) or Sends from START (`send = worker`).
///
/// See [`graphwright::start`](https://docs.rs/graphwright/latest/graphwright/attr.start.html).
#[proc_macro_attribute]
pub fn start(_args: TokenStream, input: TokenStream) -> TokenStream {
    let input: proc_macro2::TokenStream = input.into();
    let error = syn::Error::new(
        proc_macro2::Span::call_site(),
        "`#[start]` marks a fn inside a `#[graph]` module: put it in `#[graph] mod name { .. }`",
    )
    .to_compile_error();
    quote::quote!(#error #input).into()
}

/// Turns a fn into a tool a model can call: a unit struct implementing `graphwright::Tool`,
/// with the JSON Schema of its parameters.
///
/// See [`graphwright::tool`](https://docs.rs/graphwright/latest/graphwright/attr.tool.html).
#[proc_macro_attribute]
pub fn tool(args: TokenStream, input: TokenStream) -> TokenStream {
    tool::expand(args.into(), &input.into()).into()
}

/// Makes a fn a workflow that runs on threads, and whose `#[task]` calls are stored as they
/// finish.
///
/// See [`graphwright::entrypoint`](https://docs.rs/graphwright/latest/graphwright/attr.entrypoint.html).
#[proc_macro_attribute]
pub fn entrypoint(args: TokenStream, input: TokenStream) -> TokenStream {
    functional::entrypoint::expand(&args.into(), &input.into()).into()
}

/// Makes a fn a task: each call inside an entrypoint run is stored as it finishes, and is not
/// run again when the entrypoint runs again on the thread.
///
/// See [`graphwright::task`](https://docs.rs/graphwright/latest/graphwright/attr.task.html).
#[proc_macro_attribute]
pub fn task(args: TokenStream, input: TokenStream) -> TokenStream {
    functional::task::expand(args.into(), &input.into()).into()
}
