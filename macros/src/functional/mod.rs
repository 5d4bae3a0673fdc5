//! `#[task]` and `#[entrypoint]`: the functional API's fns. Both read a fn's signature the
//! same way: owned serde parameters, an optional `&Runtime<Ctx>`, and a return type that may
//! be a `Result`.

pub(crate) mod entrypoint;
pub(crate) mod task;

use crate::ctxt::Ctxt;
use proc_macro2::TokenStream;
use quote::quote;
use syn::{FnArg, GenericArgument, Ident, ItemFn, Pat, PathArguments, ReturnType, Type};

/// One parameter of a task or entrypoint fn.
pub(crate) struct Param {
    pub(crate) ident: Ident,
    pub(crate) ty: Type,
    /// `&Runtime<Ctx>` (or `&Runtime`): the context type.
    pub(crate) runtime: Option<Type>,
}

/// Reads the parameters, reporting what cannot be one.
pub(crate) fn params(cx: &mut Ctxt, item: &ItemFn, what: &str) -> Vec<Param> {
    let mut params = Vec::new();
    if !item.sig.generics.params.is_empty() {
        cx.error_spanned_by(&item.sig.generics, format!("a {what} cannot be generic: its calls are stored by type"));
    }
    for input in &item.sig.inputs {
        let FnArg::Typed(typed) = input else {
            cx.error_spanned_by(input, format!("a {what} is a free fn: it cannot take `self`"));
            continue;
        };
        let Pat::Ident(pat) = &*typed.pat else {
            cx.error_spanned_by(&typed.pat, "name this parameter (patterns are not supported here)");
            continue;
        };
        let ty = (*typed.ty).clone();
        let runtime = runtime_context(&ty);
        if runtime.is_none()
            && let Type::Reference(reference) = &ty
        {
            cx.error_spanned_by(
                reference,
                format!(
                    "a {what}'s parameters are owned values (its calls are stored, and may run after the caller \
                     moved on): take an owned type, e.g. `String` instead of `&str`"
                ),
            );
        }
        params.push(Param { ident: pat.ident.clone(), ty, runtime });
    }
    params
}

/// The context type of a `&Runtime<Ctx>` parameter (`()` for `&Runtime`).
fn runtime_context(ty: &Type) -> Option<Type> {
    let Type::Reference(reference) = ty else { return None };
    let Type::Path(path) = &*reference.elem else { return None };
    let last = path.path.segments.last()?;
    if last.ident != "Runtime" {
        return None;
    }
    Some(match &last.arguments {
        PathArguments::AngleBracketed(args) => match args.args.first() {
            Some(GenericArgument::Type(ctx)) => ctx.clone(),
            _ => syn::parse_quote!(()),
        },
        _ => syn::parse_quote!(()),
    })
}

/// The return type, and whether it is a `Result` (whose error goes through `Into<NodeError>`).
pub(crate) fn returned(item: &ItemFn) -> (Type, bool) {
    let ty: Type = match &item.sig.output {
        ReturnType::Default => syn::parse_quote!(()),
        ReturnType::Type(_, ty) => (**ty).clone(),
    };
    match first_argument(&ty, "Result") {
        Some(ok) => (ok, true),
        None => (ty, false),
    }
}

/// The first type argument of `ty` when its last path segment is `name`.
pub(crate) fn first_argument(ty: &Type, name: &str) -> Option<Type> {
    arguments(ty, name).and_then(|mut args| if args.is_empty() { None } else { Some(args.remove(0)) })
}

/// The type arguments of `ty` when its last path segment is `name`.
pub(crate) fn arguments(ty: &Type, name: &str) -> Option<Vec<Type>> {
    let Type::Path(path) = ty else { return None };
    let last = path.path.segments.last()?;
    if last.ident != name {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else { return Some(Vec::new()) };
    Some(
        args.args
            .iter()
            .filter_map(|arg| match arg {
                GenericArgument::Type(ty) => Some(ty.clone()),
                _ => None,
            })
            .collect(),
    )
}

/// The call of the user's fn `inner` with `args`, awaited when it is async, as a
/// `Result<_, NodeError>`.
pub(crate) fn call(item: &ItemFn, inner: &TokenStream, args: &[TokenStream], is_result: bool) -> TokenStream {
    let awaited = if item.sig.asyncness.is_some() { quote!(.await) } else { quote!() };
    if is_result {
        quote!(#inner(#(#args),*)#awaited.map_err(::core::convert::Into::<::graphwright::NodeError>::into))
    } else {
        quote!(::core::result::Result::<_, ::graphwright::NodeError>::Ok(#inner(#(#args),*)#awaited))
    }
}
