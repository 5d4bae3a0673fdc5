//! `#[graph]`: parse → check → codegen over one inline module.
//!
//! Imports run one way: `parse` fills the types of `ir`; `check` and `routes` read them;
//! `codegen` reads them and the `check` phase's view of the wiring, and adds the items of
//! `start` and `imports`. `ir` and `case` are leaves every phase may use.

mod case;
mod check;
mod codegen;
mod imports;
mod ir;
mod parse;
mod routes;
mod start;

use crate::ctxt::Ctxt;
use proc_macro2::TokenStream;
use quote::quote;

/// Expands `#[graph(args)] mod name { .. }`.
pub(crate) fn expand(args: TokenStream, input: &TokenStream) -> TokenStream {
    let mut cx = Ctxt::default();
    let Ok(module) = syn::parse2::<syn::ItemMod>(input.clone()) else {
        let error = syn::Error::new_spanned(input, "`#[graph]` goes on an inline module: `#[graph] mod name { .. }`");
        let error = error.to_compile_error();
        return quote!(#error #input);
    };
    let args = parse::parse_args(&mut cx, args);
    let mut def = parse::parse_module(&mut cx, module, args.state.as_ref());
    let names = codegen::Names::new(&args, &def);
    // Before the wiring checks: a route the node forgot to declare also leaves its target
    // unreached, and that follows from the same mistake.
    routes::check_undeclared_routes(&mut cx, &mut def);
    check::check(&mut cx, &def, names.is_some());
    let wired = !cx.has_errors();
    codegen::expand(def, names.as_ref(), wired, cx.into_compile_errors())
}
