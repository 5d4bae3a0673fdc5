//! `#[task]`: a fn whose every call inside an entrypoint run is stored as it finishes. The fn
//! keeps its name and parameters and returns a `TaskFuture` of its result; its body moves to a
//! private fn the future runs.

use super::{Param, call, params, returned};
use crate::ctxt::Ctxt;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ItemFn, Token};

/// The options `#[task(..)]` accepts.
const OPTIONS: &[&str] = &["retry", "timeout", "cache"];

#[derive(Default)]
struct Options {
    retry: Option<Expr>,
    timeout: Option<Expr>,
    cache: Option<Expr>,
}

/// Expands `#[task(args)] fn ..`.
pub(crate) fn expand(args: TokenStream, input: &TokenStream) -> TokenStream {
    let mut cx = Ctxt::default();
    let options = parse_options(&mut cx, args);
    let Ok(item) = syn::parse2::<ItemFn>(input.clone()) else {
        let error =
            syn::Error::new_spanned(input, "`#[task]` goes on a free fn: `#[task] async fn name(..) -> T { .. }`");
        let error = error.to_compile_error();
        return quote!(#error #input);
    };
    let params = params(&mut cx, &item, "task");
    if options.timeout.is_some() && item.sig.asyncness.is_none() {
        cx.error_spanned_by(
            item.sig.fn_token,
            "a sync task cannot be stopped mid-way, so a timeout could not stop it: make it `async fn` or drop `timeout`",
        );
    }
    if cx.has_errors() {
        // The fn as written, so the rest of the crate still sees it.
        let errors = cx.into_compile_errors();
        return quote!(#item #errors);
    }
    let body = expand_task(&item, &params, &options);
    let errors = cx.into_compile_errors();
    quote!(#body #errors)
}

fn parse_options(cx: &mut Ctxt, args: TokenStream) -> Options {
    let mut options = Options::default();
    let pairs = match Punctuated::<syn::MetaNameValue, Token![,]>::parse_terminated.parse2(args) {
        Ok(pairs) => pairs,
        Err(error) => {
            cx.push(error);
            return options;
        }
    };
    for pair in pairs {
        let name = pair.path.get_ident().map(ToString::to_string).unwrap_or_default();
        let slot = match name.as_str() {
            "retry" => &mut options.retry,
            "timeout" => &mut options.timeout,
            "cache" => &mut options.cache,
            _ => {
                let hint = graphwright_wiring::closest(&name, OPTIONS.iter().copied())
                    .map(|near| format!("; did you mean `{near}`?"))
                    .unwrap_or_default();
                cx.error_spanned_by(
                    &pair.path,
                    format!("unknown task option `{name}`{hint} (options: `retry = ..`, `timeout = ..`, `cache = ..`)"),
                );
                continue;
            }
        };
        if slot.is_some() {
            cx.error_spanned_by(&pair.path, format!("`{name}` is given twice"));
        }
        *slot = Some(pair.value);
    }
    options
}

fn expand_task(item: &ItemFn, params: &[Param], options: &Options) -> TokenStream {
    let f = quote!(::graphwright::functional);
    let name = &item.sig.ident;
    let task = name.to_string();
    let inner = format_ident!("__graphwright_task_{}", name);
    let (value, is_result) = returned(item);
    let args: Vec<&Param> = params.iter().filter(|p| p.runtime.is_none()).collect();
    let arg_idents: Vec<_> = args.iter().map(|p| &p.ident).collect();
    let arg_types: Vec<_> = args.iter().map(|p| &p.ty).collect();
    // Each argument is recorded through a call spanned at its type, so a type that cannot be
    // recorded is reported where it is written.
    let arg_json = args.iter().map(|p| {
        let (ident, ty) = (&p.ident, &p.ty);
        quote_spanned!(ty.span()=> #f::__private::task_arg::<#ty>(&#ident))
    });
    let call_args: Vec<TokenStream> = params
        .iter()
        .map(|p| {
            let ident = &p.ident;
            p.runtime.as_ref().map_or_else(|| quote!(#ident), |ctx| quote!(__rt.get::<#ctx>()?))
        })
        .collect();
    let call = call(item, &quote!(#inner), &call_args, is_result);
    let mut built = quote!(#f::TaskOptions::new());
    match &options.retry {
        Some(Expr::Array(list)) => {
            for retry in &list.elems {
                built = quote!(#built.retry(#retry));
            }
        }
        Some(retry) => built = quote!(#built.retry(#retry)),
        None => {}
    }
    if let Some(timeout) = &options.timeout {
        built = quote!(#built.timeout(#timeout));
    }
    if let Some(cache) = &options.cache {
        built = quote!(#built.cache(#cache));
    }
    // A task with retries runs its body once per attempt, each with its own copy of the
    // arguments; otherwise the arguments move into its one attempt.
    let attempt_args = if options.retry.is_some() {
        let copies = args.iter().map(|p| {
            let (ident, ty) = (&p.ident, &p.ty);
            quote_spanned!(ty.span()=> let #ident = <#ty as ::core::clone::Clone>::clone(&#ident);)
        });
        quote!(#(#copies)*)
    } else {
        quote! {
            let ::core::option::Option::Some((#(#arg_idents,)*)) = __once.take() else {
                return ::std::boxed::Box::pin(::core::future::ready(::core::result::Result::Err(
                    #f::__private::called_twice(#task),
                )));
            };
        }
    };
    let once = if options.retry.is_some() {
        quote!()
    } else {
        quote!(let mut __once = ::core::option::Option::Some((#(#arg_idents,)*));)
    };
    let vis = &item.vis;
    let attrs = &item.attrs;
    let asyncness = &item.sig.asyncness;
    let output = &item.sig.output;
    let inputs = &item.sig.inputs;
    let block = &item.block;
    let future = quote_spanned!(value.span()=> #f::TaskFuture::<#value>);
    quote! {
        #(#attrs)*
        #vis fn #name(#(#arg_idents: #arg_types),*) -> #f::TaskFuture<#value> {
            let __args = #f::__private::task_args([#(#arg_json),*]);
            #once
            #future::call(
                #task,
                #built,
                __args,
                ::std::boxed::Box::new(move |__rt: #f::TaskRuntime| {
                    #attempt_args
                    ::std::boxed::Box::pin(async move { #call })
                }),
            )
        }

        #[doc(hidden)]
        #[allow(clippy::unused_async)]
        #asyncness fn #inner(#inputs) #output #block
    }
}
