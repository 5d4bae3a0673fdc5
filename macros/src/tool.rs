//! `#[tool]`: a free fn becomes a unit struct implementing `graphwright::Tool`, whose parameter
//! schema is derived (through schemars) from the fn's parameters. Parse → check → codegen.

use crate::ctxt::Ctxt;
use crate::paths::private;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, FnArg, Ident, ItemFn, Lit, LitStr, Meta, Pat, ReturnType, Token, Type};

/// The options `#[tool(..)]` accepts, for suggestions.
const OPTIONS: &[&str] = &["name", "description"];

/// `#[tool(name = "..", description = "..")]`.
#[derive(Default)]
struct Options {
    name: Option<LitStr>,
    description: Option<LitStr>,
}

/// A parsed tool fn. `item` is the fn as it is emitted: parameter attributes stripped.
struct ToolDef {
    item: ItemFn,
    name: String,
    description: String,
    params: Vec<Param>,
}

struct Param {
    ident: Ident,
    ty: Type,
    kind: Kind,
}

enum Kind {
    /// Read from the model's arguments; `doc` (the `///` text) is the property's description.
    Argument { doc: String, default: Option<Default> },
    /// Injected: `ToolRuntime<..>` (by value) or `&ToolRuntime<..>`; `view` is the type
    /// without the reference.
    Runtime { by_ref: bool, view: Type },
}

enum Default {
    /// `#[default]`: `Default::default()`.
    Trait,
    /// `#[default = expr]`.
    Expr(Expr),
}

/// Expands `#[tool(args)] fn ..`.
pub(crate) fn expand(args: TokenStream, input: &TokenStream) -> TokenStream {
    let mut cx = Ctxt::default();
    let options = parse_options(&mut cx, args);
    let Ok(item) = syn::parse2::<ItemFn>(input.clone()) else {
        let error = syn::Error::new_spanned(input, "`#[tool]` goes on a free fn: `#[tool] fn name(..) -> T { .. }`");
        let error = error.to_compile_error();
        return quote!(#error #input);
    };
    let def = parse(&mut cx, &options, item);
    check_signature(&mut cx, &def.item);
    let describable = !cx.has_errors();
    check_description(&mut cx, &def);
    check_name(&mut cx, &def, options.name.as_ref());
    // A missing description or a bad name still yields the full expansion; a bad signature
    // yields a fallback impl, so each mistake gives one error and not a cascade.
    let body = if describable { expand_tool(&def) } else { fallback(&def) };
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
        let key = quote::ToTokens::to_token_stream(&pair.path).to_string().replace(' ', "");
        let slot = match key.as_str() {
            "name" => &mut options.name,
            "description" => &mut options.description,
            _ => {
                let hint = graphwright_wiring::closest(&key, OPTIONS.iter().copied())
                    .map(|near| format!("; did you mean `{near}`?"))
                    .unwrap_or_default();
                cx.error_spanned_by(
                    &pair.path,
                    format!("unknown tool option `{key}`{hint} (options: `name = \"..\"`, `description = \"..\"`)"),
                );
                continue;
            }
        };
        match &pair.value {
            Expr::Lit(syn::ExprLit { lit: Lit::Str(text), .. }) if slot.is_none() => *slot = Some(text.clone()),
            Expr::Lit(syn::ExprLit { lit: Lit::Str(_), .. }) => {
                cx.error_spanned_by(&pair.path, format!("`{key}` is given twice"));
            }
            other => {
                cx.error_spanned_by(other, format!("`{key}` takes a string: `{key} = \"..\"`"));
            }
        }
    }
    options
}

fn parse(cx: &mut Ctxt, options: &Options, mut item: ItemFn) -> ToolDef {
    let docs = doc_text(&item.attrs);
    let description = options.description.as_ref().map_or(docs, LitStr::value).trim().to_owned();
    let name = options.name.as_ref().map_or_else(|| unraw(&item.sig.ident), LitStr::value);
    let mut params = Vec::new();
    for input in &mut item.sig.inputs {
        let FnArg::Typed(typed) = input else {
            cx.error_spanned_by(&*input, "a tool is a free fn: it cannot take `self`");
            continue;
        };
        let (docs, default) = take_param_attrs(cx, &mut typed.attrs);
        let Pat::Ident(pat) = &*typed.pat else {
            cx.error_spanned_by(&typed.pat, "name this parameter: its name is the argument's key in the tool's schema");
            continue;
        };
        let ident = pat.ident.clone();
        let ty = (*typed.ty).clone();
        if let Some(kind) = classify(cx, &ty, &params) {
            if let (Kind::Runtime { .. }, Some(_)) = (&kind, &default) {
                cx.error_spanned_by(&ty, "the injected `ToolRuntime` takes no `#[default]`");
            }
            let kind = match kind {
                Kind::Argument { .. } => Kind::Argument { doc: doc_text(&docs).trim().to_owned(), default },
                runtime @ Kind::Runtime { .. } => runtime,
            };
            params.push(Param { ident, ty, kind });
        }
    }
    ToolDef { item, name, description, params }
}

/// Sorts a parameter type into an argument or the injected runtime; `None` (with an error
/// recorded) for a type no tool parameter may have.
fn classify(cx: &mut Ctxt, ty: &Type, earlier: &[Param]) -> Option<Kind> {
    let (by_ref, view) = match ty {
        Type::Reference(reference) => (Some(reference), &*reference.elem),
        other => (None, other),
    };
    let is_runtime = matches!(view, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "ToolRuntime"));
    if is_runtime {
        return check_runtime(cx, ty, by_ref, earlier)
            .then(|| Kind::Runtime { by_ref: by_ref.is_some(), view: view.clone() });
    }
    match ty {
        Type::Reference(_) => cx.error_spanned_by(
            ty,
            "a tool parameter is read from the model's JSON, so it must own its data: \
             take an owned type (`String`, not `&str`)",
        ),
        Type::ImplTrait(_) => {
            cx.error_spanned_by(ty, "a tool parameter needs a concrete type: its JSON Schema is derived from it");
        }
        _ => {
            return Some(Kind::Argument { doc: String::new(), default: None });
        }
    }
    None
}

/// Rule: the runtime is injected once, by value or by shared reference.
fn check_runtime(cx: &mut Ctxt, ty: &Type, by_ref: Option<&syn::TypeReference>, earlier: &[Param]) -> bool {
    if let Some(mutability) = by_ref.and_then(|r| r.mutability.as_ref()) {
        cx.error_spanned_by(
            mutability,
            "a tool reads its runtime, it cannot change it: take `&ToolRuntime<..>` or `ToolRuntime<..>`",
        );
        return false;
    }
    if earlier.iter().any(|p| matches!(p.kind, Kind::Runtime { .. })) {
        cx.error_spanned_by(ty, "a tool takes `ToolRuntime` at most once: remove this parameter and use the first");
        return false;
    }
    true
}

/// Removes the parameter's `///` docs and `#[default]`, which the fn cannot keep.
fn take_param_attrs(cx: &mut Ctxt, attrs: &mut Vec<Attribute>) -> (Vec<Attribute>, Option<Default>) {
    let mut docs = Vec::new();
    let mut default = None;
    for attr in std::mem::take(attrs) {
        if attr.path().is_ident("doc") {
            docs.push(attr);
        } else if attr.path().is_ident("default") {
            if default.is_some() {
                cx.error_spanned_by(&attr, "a parameter takes one `#[default]`");
            }
            default = match attr.meta {
                Meta::Path(_) => Some(Default::Trait),
                Meta::NameValue(pair) => Some(Default::Expr(pair.value)),
                Meta::List(list) => {
                    cx.error_spanned_by(&list, "write `#[default]` or `#[default = expr]`");
                    None
                }
            };
        } else {
            attrs.push(attr);
        }
    }
    (docs, default)
}

/// Rule: a tool is a plain fn whose parameter types are known: no generics, no `unsafe`.
fn check_signature(cx: &mut Ctxt, item: &ItemFn) {
    if !item.sig.generics.params.is_empty() {
        cx.error_spanned_by(
            &item.sig.generics,
            "a tool cannot be generic: its JSON Schema is derived from concrete parameter types",
        );
    }
    if let Some(unsafety) = &item.sig.unsafety {
        cx.error_spanned_by(unsafety, "a tool cannot be `unsafe`: the runtime calls it with the model's arguments");
    }
}

/// Rule: the model chooses tools by their descriptions, so every tool has one.
fn check_description(cx: &mut Ctxt, def: &ToolDef) {
    if def.description.is_empty() {
        cx.error_spanned_by(
            &def.item.sig.ident,
            "a tool needs a description: the model reads it (write a `///` doc comment or `#[tool(description = \"..\")]`)",
        );
    }
}

/// Rule: a tool name is 1 to 64 ASCII letters, digits, `_` or `-`, as model providers require.
fn check_name(cx: &mut Ctxt, def: &ToolDef, given: Option<&LitStr>) {
    let valid = (1..=64).contains(&def.name.len())
        && def.name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !valid {
        let at = given.map_or_else(|| def.item.sig.ident.span(), LitStr::span);
        cx.push(syn::Error::new(
            at,
            format!("`{}` is not a valid tool name: use 1 to 64 letters, digits, `_` or `-`", def.name),
        ));
    }
}

/// The struct and the `Tool` impl. For `/// Weather. #[tool] async fn weather(city: String,
/// #[default = 1] days: u8, rt: &ToolRuntime<S, C>) -> String` it expands to (paths shortened):
///
/// ```text
/// async fn weather(city: String, days: u8, rt: &ToolRuntime<S, C>) -> String { .. }
/// /// The `weather` tool ..
/// #[derive(Clone, Copy, Debug, Default)]
/// pub struct Weather;
/// const _: () = {
///     fn __graphwright_param_city() -> ParamSpec<String> { param_spec::<String>() }
///     fn __graphwright_param_days() -> ParamSpec<u8> { param_spec::<u8>() }
///     fn __graphwright_default_days() -> u8 { 1 }
///     impl Tool for Weather {
///         fn name(&self) -> &str { "weather" }
///         fn description(&self) -> &str { "Weather." }
///         fn parameters(&self) -> Value {
///             // computed once
///             let mut schema = ToolSchema::new();
///             schema.param(__graphwright_param_city(), "city", "", true, None);
///             schema.param(__graphwright_param_days(), "days", "", false, DefaultJson(&__graphwright_default_days()).json());
///             schema.finish()
///         }
///         fn call<'a>(&'a self, args: Value, rt: &'a ToolRuntime) -> ToolFuture<'a> {
///             Box::pin(async move {
///                 let mut args = ToolArgs::new("weather", args, &["city", "days"])?;
///                 let city = args.take(__graphwright_param_city(), "city", true)?;
///                 let days = args.take_or(__graphwright_param_days(), "days", __graphwright_default_days)?;
///                 let rt: ToolRuntime<S, C> = rt.typed("weather")?;
///                 tool_return("weather", weather(city, days, &rt).await)
///             })
///         }
///     }
/// };
/// ```
///
/// Each parameter type is named in one spanned `param_spec::<T>()` call, so a type that is not
/// `JsonSchema + Deserialize` gives exactly one error, under the type.
fn expand_tool(def: &ToolDef) -> TokenStream {
    let p = private();
    let name = &def.name;
    let mut helpers = Vec::new();
    let mut schema_calls = Vec::new();
    let mut takes = Vec::new();
    let mut call_args = Vec::new();
    let mut names = Vec::new();
    let mut bind_runtime = quote!(let _ = rt;);
    for (index, param) in def.params.iter().enumerate() {
        let ty = &param.ty;
        let local = format_ident!("__arg{}", index);
        match &param.kind {
            Kind::Argument { doc, default } => {
                let key = unraw(&param.ident);
                let spec = format_ident!("__graphwright_param_{}", key);
                helpers.push(quote_spanned!(ty.span()=> fn #spec() -> #p::ParamSpec<#ty> { #p::param_spec::<#ty>() }));
                let (schema_default, take) = match default {
                    None => {
                        let required = !is_option(ty);
                        (quote!(#p::Option::None), quote!(__args.take(#spec(), #key, #required)?))
                    }
                    Some(default) => {
                        let f = format_ident!("__graphwright_default_{}", key);
                        helpers.push(match default {
                            Default::Trait => {
                                quote_spanned!(ty.span()=> fn #f() -> #ty { ::core::default::Default::default() })
                            }
                            Default::Expr(expr) => quote_spanned!(expr.span()=> fn #f() -> #ty { #expr }),
                        });
                        (quote!(#p::DefaultJson(&#f()).json()), quote!(__args.take_or(#spec(), #key, #f)?))
                    }
                };
                let required = default.is_none() && !is_option(ty);
                schema_calls.push(quote!(__schema.param(#spec(), #key, #doc, #required, #schema_default);));
                takes.push(quote!(let #local = #take;));
                call_args.push(quote!(#local));
                names.push(key);
            }
            Kind::Runtime { by_ref, view } => {
                bind_runtime = quote_spanned!(view.span()=> let __rt: #view = rt.typed(#name)?;);
                call_args.push(if *by_ref { quote!(&__rt) } else { quote!(__rt) });
            }
        }
    }
    let reads_runtime = def.params.iter().any(|param| matches!(param.kind, Kind::Runtime { .. }));
    let user = &def.item.sig.ident;
    let wait = def.item.sig.asyncness.map(|_| quote!(.await));
    let convert = match &def.item.sig.output {
        ReturnType::Type(_, ty) if returns_result(ty) => {
            quote_spanned!(ty.span()=> #p::tool_result(#name, __out))
        }
        ReturnType::Type(_, ty) => quote_spanned!(ty.span()=> #p::tool_return(#name, __out)),
        ReturnType::Default => quote!(#p::tool_return(#name, __out)),
    };
    // The parameters are owned because they are read from JSON; a tool that only borrows one
    // should not be told by clippy to take a reference it cannot have.
    let mut item = def.item.clone();
    item.attrs.push(syn::parse_quote!(#[allow(clippy::needless_pass_by_value)]));
    let (strukt, description) = (tool_struct(def), &def.description);
    let strukt_ident = struct_ident(def);
    quote! {
        #item
        #strukt

        const _: () = {
            #(#helpers)*

            #[automatically_derived]
            impl #p::Tool for #strukt_ident {
                fn name(&self) -> &str {
                    #name
                }

                fn description(&self) -> &str {
                    #description
                }

                fn parameters(&self) -> #p::serde_json::Value {
                    static SCHEMA: #p::OnceLock<#p::serde_json::Value> = #p::OnceLock::new();
                    #p::serde_json::Value::clone(SCHEMA.get_or_init(|| {
                        #[allow(unused_imports)]
                        use #p::NoDefaultJson as _;
                        let mut __schema = #p::ToolSchema::new();
                        #(#schema_calls)*
                        __schema.finish()
                    }))
                }

                fn reads_runtime(&self) -> bool {
                    #reads_runtime
                }

                fn call<'a>(&'a self, args: #p::serde_json::Value, rt: &'a #p::ToolRuntime) -> #p::ToolFuture<'a> {
                    #p::Box::pin(async move {
                        #[allow(unused_mut)]
                        let mut __args = #p::ToolArgs::new(#name, args, &[#(#names),*])?;
                        #(#takes)*
                        #bind_runtime
                        let __out = #user(#(#call_args),*) #wait;
                        #convert
                    })
                }
            }
        };
    }
}

/// After a signature error: the fn and the struct, with a `Tool` impl that never runs (the
/// crate does not compile), so that uses of the struct elsewhere raise no further errors.
fn fallback(def: &ToolDef) -> TokenStream {
    let p = private();
    let (item, strukt, ident, name) = (&def.item, tool_struct(def), struct_ident(def), &def.name);
    quote! {
        #item
        #strukt

        #[automatically_derived]
        impl #p::Tool for #ident {
            fn name(&self) -> &str {
                #name
            }
            fn description(&self) -> &str {
                ""
            }
            fn parameters(&self) -> #p::serde_json::Value {
                #p::serde_json::Value::Null
            }
            fn call<'a>(&'a self, _: #p::serde_json::Value, _: &'a #p::ToolRuntime) -> #p::ToolFuture<'a> {
                ::core::unreachable!("`#[tool]` reported a compile error")
            }
        }
    }
}

/// `pub struct Weather;`, with the fn's visibility and a doc comment.
fn tool_struct(def: &ToolDef) -> TokenStream {
    let vis = &def.item.vis;
    let ident = struct_ident(def);
    let doc = format!("The `{}` tool, generated by `#[tool]` from the fn `{}`.", def.name, unraw(&def.item.sig.ident));
    let description = def.description.lines().map(|line| format!(" {line}"));
    quote! {
        #[doc = #doc]
        #[doc = ""]
        #(#[doc = #description])*
        #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug, ::core::default::Default)]
        #vis struct #ident;
    }
}

/// `get_weather` → `GetWeather`, at the fn name's span.
fn struct_ident(def: &ToolDef) -> Ident {
    let pascal: String = unraw(&def.item.sig.ident)
        .split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map(|c| c.to_uppercase().chain(chars).collect::<String>()).unwrap_or_default()
        })
        .collect();
    Ident::new(if pascal.is_empty() { "Tool" } else { &pascal }, def.item.sig.ident.span())
}

/// Whether the type is written `Option<..>` (such a parameter may be left out).
fn is_option(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Option"))
}

/// Whether the return type is written `Result<..>` (any path ending in `Result`, so
/// `io::Result<T>` and `anyhow::Result<T>` count).
fn returns_result(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Result"))
}

/// The text of `///` comments: one line per comment, the leading space of each removed.
fn doc_text(attrs: &[Attribute]) -> String {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(syn::MetaNameValue {
                value: Expr::Lit(syn::ExprLit { lit: Lit::Str(text), .. }), ..
            }) => Some(text.value()),
            _ => None,
        })
        .map(|line| line.strip_prefix(' ').map(str::to_owned).unwrap_or(line))
        .collect();
    lines.join("\n")
}

fn unraw(ident: &Ident) -> String {
    ident.to_string().trim_start_matches("r#").to_owned()
}
