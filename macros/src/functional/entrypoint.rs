//! `#[entrypoint]`: a fn that is a workflow. The fn stays as written; a module of the same name
//! gains `entrypoint()`, the builder of the graph of one node that runs it.

use super::{Param, arguments, call, first_argument, params, returned};
use crate::ctxt::Ctxt;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{ItemFn, Type};

/// Expands `#[entrypoint] fn ..`.
pub(crate) fn expand(args: &TokenStream, input: &TokenStream) -> TokenStream {
    let mut cx = Ctxt::default();
    if !args.is_empty() {
        cx.error_spanned_by(
            args,
            "`#[entrypoint]` takes no options: give the checkpointer, store and cache on `entrypoint()`",
        );
    }
    let Ok(item) = syn::parse2::<ItemFn>(input.clone()) else {
        let error = syn::Error::new_spanned(
            input,
            "`#[entrypoint]` goes on a free fn: `#[entrypoint] async fn name(input: T) -> R { .. }`",
        );
        let error = error.to_compile_error();
        return quote!(#error #input);
    };
    let params = params(&mut cx, &item, "entrypoint");
    let Some(shape) = shape(&mut cx, &item, &params) else {
        let errors = cx.into_compile_errors();
        return quote!(#item #errors);
    };
    let body = expand_entrypoint(&item, &params, &shape);
    let errors = cx.into_compile_errors();
    quote!(#item #body #errors)
}

/// What the entrypoint's signature says.
struct Shape<'a> {
    input: &'a Param,
    /// `previous: Option<P>`: the parameter and `P`.
    previous: Option<(&'a Param, Type)>,
    context: Type,
    /// What it returns, and what it saves (the same type unless it returns a `Final`).
    value: Type,
    saved: Type,
    is_result: bool,
    is_final: bool,
}

fn shape<'a>(cx: &mut Ctxt, item: &ItemFn, params: &'a [Param]) -> Option<Shape<'a>> {
    let mut input = None;
    let mut previous = None;
    let mut context: Option<Type> = None;
    for param in params {
        if let Some(ctx) = &param.runtime {
            context = Some(ctx.clone());
        } else if param.ident == "previous" {
            match first_argument(&param.ty, "Option") {
                Some(saved) => previous = Some((param, saved)),
                None => cx.error_spanned_by(
                    &param.ty,
                    "`previous` is what the thread's last run saved, and the first run has none: declare it as \
                     `Option<T>`",
                ),
            }
        } else if input.is_some() {
            cx.error_spanned_by(
                &param.ident,
                "an entrypoint takes one input (besides `previous` and `&Runtime`): gather the values in a struct",
            );
        } else {
            input = Some(param);
        }
    }
    let Some(input) = input else {
        cx.error_spanned_by(
            &item.sig.ident,
            "an entrypoint takes its input as a parameter: `fn name(input: T)` (with `previous: Option<P>` and \
             `rt: &Runtime<Ctx>` if it needs them)",
        );
        return None;
    };
    let (returned, is_result) = returned(item);
    let (value, saved, is_final) = match arguments(&returned, "Final") {
        Some(args) if !args.is_empty() => {
            let saved = args.get(1).cloned().unwrap_or_else(|| args[0].clone());
            (args[0].clone(), saved, true)
        }
        _ => (returned.clone(), returned, false),
    };
    if cx.has_errors() {
        return None;
    }
    Some(Shape {
        input,
        previous,
        context: context.unwrap_or_else(|| syn::parse_quote!(())),
        value,
        saved,
        is_result,
        is_final,
    })
}

fn expand_entrypoint(item: &ItemFn, params: &[Param], shape: &Shape<'_>) -> TokenStream {
    let f = quote!(::graphwright::functional);
    let name = &item.sig.ident;
    let entrypoint = name.to_string();
    let Shape { input, previous, context, value, saved, is_result, is_final } = shape;
    let input_ty = &input.ty;
    let args: Vec<TokenStream> = params
        .iter()
        .map(|p| {
            if p.runtime.is_some() {
                quote!(__rt)
            } else if std::ptr::eq(p, *input) {
                quote!(__input)
            } else {
                quote!(__previous)
            }
        })
        .collect();
    let call = call(item, &quote!(super::#name), &args, *is_result);
    let finish = if *is_final {
        quote!(#f::__private::finished(#entrypoint, __out))
    } else {
        quote!(#f::__private::returned(#entrypoint, __out))
    };
    // `previous` must be what the entrypoint saves: checked where `previous` is declared.
    let saves_check = previous.as_ref().map(|(param, p)| {
        let span = param.ty.span();
        // The saved type is written elsewhere (the return type): moved to `previous`'s span, so
        // the error sits under `previous`, where the fix usually goes.
        let saved = respan(quote!(#saved), span);
        quote_spanned!(span=> #f::__private::saves::<#p, #saved>();)
    });
    let previous_read =
        previous.as_ref().map(|(_, p)| quote!(let __previous = #f::__private::previous::<#p>(#entrypoint, __saved)?;));
    let default_context = if context_is_unit(context) {
        quote!(::core::option::Option::Some(|| ()))
    } else {
        quote!(::core::option::Option::None)
    };
    let input_check = quote_spanned!(input_ty.span()=> #f::__private::entrypoint_input::<#input_ty>(););
    let value_check = quote_spanned!(value.span()=> #f::__private::entrypoint_value::<#value>(););
    let vis = &item.vis;
    let doc = format!(
        "The entrypoint `{entrypoint}`: [`entrypoint()`](entrypoint) builds it (`.checkpointer(..)`, `.store(..)`, \
         `.cache(..)`, then `.compile()`)."
    );
    let fn_doc = format!("Builds the entrypoint `{entrypoint}`.");
    quote! {
        #[doc = #doc]
        #[allow(non_snake_case, clippy::module_name_repetitions)]
        #vis mod #name {
            #[allow(unused_imports, clippy::wildcard_imports)]
            use super::*;

            #[doc = #fn_doc]
            #[must_use]
            pub fn entrypoint() -> #f::EntrypointBuilder<#input_ty, #value, #context> {
                #input_check
                #value_check
                #saves_check
                #f::EntrypointBuilder::new(#entrypoint, ::std::sync::Arc::new(__run), #default_context)
            }

            #[allow(unused_variables, clippy::needless_pass_by_value)]
            fn __run<'a>(
                __input: ::graphwright::serde_json::Value,
                __saved: ::graphwright::serde_json::Value,
                __rt: &'a ::graphwright::Runtime<#context>,
            ) -> ::graphwright::__private::BoxFuture<
                'a,
                ::core::result::Result<(::graphwright::serde_json::Value, ::graphwright::serde_json::Value), ::graphwright::NodeError>,
            > {
                ::std::boxed::Box::pin(async move {
                    let __input = #f::__private::input::<#input_ty>(#entrypoint, __input)?;
                    #previous_read
                    let __out = #call?;
                    #finish
                })
            }
        }
    }
}

/// `tokens` with every span set to `span`.
fn respan(tokens: TokenStream, span: proc_macro2::Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut token| {
            if let proc_macro2::TokenTree::Group(group) = &token {
                let mut inner = proc_macro2::Group::new(group.delimiter(), respan(group.stream(), span));
                inner.set_span(span);
                token = proc_macro2::TokenTree::Group(inner);
            }
            token.set_span(span);
            token
        })
        .collect()
}

fn context_is_unit(ty: &Type) -> bool {
    matches!(ty, Type::Tuple(tuple) if tuple.elems.is_empty())
}
