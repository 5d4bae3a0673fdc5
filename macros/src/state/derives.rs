//! The state struct as emitted: the derives `#[state]` adds, and the per-field attributes that
//! route serde and schemars through the runtime's field traits, so that a field type without
//! what they need is one error under the type.

use crate::paths::private;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Attribute, Fields, ItemStruct, Path, Type};

/// The struct with `Clone, Debug, Default, Serialize, Deserialize, JsonSchema` derived, skipping
/// any the user already derives, and `#[serde(deny_unknown_fields)]`: a stored state must hold
/// exactly the struct's fields, so a record of another shape is an error, never a state quietly
/// filled with defaults (a field added later can opt in with its own `#[serde(default)]`). A
/// struct with a `#[serde(flatten)]` field keeps serde's default, which `deny_unknown_fields`
/// does not support. The derive goes before the user's attributes and the helper attributes
/// after them, so that no `#[serde]` or `#[schemars]` helper precedes its derive. Expands to:
///
/// ```text
/// #[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
/// #[serde(crate = "::graphwright::__private::serde")]
/// #[schemars(crate = "::graphwright::__private::schemars")]
/// #[serde(deny_unknown_fields)]
/// pub struct State {
///     /// The user's doc comment (the property's description).
///     #[serde(serialize_with = "<u32 as StateField>::serialize_field", deserialize_with = "..")]
///     #[schemars(schema_with = "::graphwright::__private::field_schema::<u32>")]
///     pub count: u32,
/// }
/// ```
pub(super) fn with_derives(item: &ItemStruct) -> TokenStream {
    let p = private();
    let present: Vec<String> = item
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("derive"))
        .flat_map(|a| {
            a.parse_args_with(syn::punctuated::Punctuated::<Path, syn::Token![,]>::parse_terminated).map_or_else(
                |_| Vec::new(),
                |paths| paths.into_iter().filter_map(|p| p.segments.last().map(|s| s.ident.to_string())).collect(),
            )
        })
        .collect();
    let wanted = [
        ("Clone", quote!(::core::clone::Clone)),
        ("Debug", quote!(::core::fmt::Debug)),
        ("Default", quote!(::core::default::Default)),
        ("Serialize", quote!(#p::serde::Serialize)),
        ("Deserialize", quote!(#p::serde::Deserialize)),
        ("JsonSchema", quote!(#p::schemars::JsonSchema)),
    ];
    let derives: Vec<&TokenStream> =
        wanted.iter().filter(|(n, _)| !present.iter().any(|p| p == n)).map(|(_, path)| path).collect();
    let mut item = item.clone();
    if let Fields::Named(fields) = &mut item.fields {
        for field in &mut fields.named {
            let serde_hooked = !has_own_serde_hooks(&field.attrs);
            if serde_hooked {
                let hooks = serde_hooks(&field.ty, "serialize_field", "deserialize_field");
                field.attrs.push(syn::parse_quote!(#hooks));
            }
            let hide_default = hides_default(&field.attrs, serde_hooked);
            if let Some(hooks) = schema_hooks(&field.ty, hide_default, !has_own_schema(&field.attrs)) {
                field.attrs.push(syn::parse_quote!(#hooks));
            }
        }
    }
    if !derives.is_empty() {
        // Before the user's own attributes (after the doc comment), so that a `#[serde(..)]` or
        // `#[schemars(..)]` the user put on the struct follows the derive that reads it.
        let at = item.attrs.iter().take_while(|a| a.path().is_ident("doc")).count();
        item.attrs.insert(at, syn::parse_quote!(#[derive(#(#derives),*)]));
    }
    item.attrs.push(syn::parse_quote!(#[serde(crate = "::graphwright::__private::serde")]));
    if !attr_word(&item.attrs, "schemars", "crate") {
        item.attrs.push(syn::parse_quote!(#[schemars(crate = "::graphwright::__private::schemars")]));
    }
    if hides_default(&item.attrs, true) {
        item.attrs.push(syn::parse_quote!(#[schemars(!default)]));
    }
    if !attr_word(&item.attrs, "serde", "deny_unknown_fields") && !has_flatten(&item) {
        item.attrs.push(syn::parse_quote!(#[serde(deny_unknown_fields)]));
    }
    quote!(#item)
}

/// `#[serde(serialize_with = .., deserialize_with = ..)]` naming `StateField`'s functions, spanned
/// at the field's type: every place serde needs the type's impls asks for `StateField` there,
/// so a type without them is one error under the type, with `StateField`'s message.
pub(super) fn serde_hooks(ty: &Type, serialize: &str, deserialize: &str) -> TokenStream {
    let span = ty.span();
    // The type is named in the path so the trait is asked of it right there, at the type's span
    // (inferred from the argument, rustc would report it under the derive instead).
    let of = |function: &str| {
        let path = format!("<{} as ::graphwright::__private::StateField>::{function}", quote!(#ty));
        syn::LitStr::new(&path, span)
    };
    let (serialize, deserialize) = (of(serialize), of(deserialize));
    quote_spanned!(span=> #[serde(serialize_with = #serialize, deserialize_with = #deserialize)])
}

/// The field's `#[schemars(..)]` for the derived schema, spanned at the field's type:
/// - `schema_with = "::graphwright::__private::field_schema::<T>"` (when `with_schema`): the
///   field's schema comes from the runtime's `field_schema`, whose `StateFieldSchema` bound is
///   then the only place the type is asked for a JSON Schema, so a type without one is one error
///   under the type, with that trait's message. The schema is the one schemars gives the type.
/// - `!default` (when `hide_default`): see [`hides_default`].
fn schema_hooks(ty: &Type, hide_default: bool, with_schema: bool) -> Option<TokenStream> {
    let span = ty.span();
    let path = format!("::graphwright::__private::field_schema::<{}>", quote!(#ty));
    let path = syn::LitStr::new(&path, span);
    match (hide_default, with_schema) {
        (true, true) => Some(quote_spanned!(span=> #[schemars(!default, schema_with = #path)])),
        (false, true) => Some(quote_spanned!(span=> #[schemars(schema_with = #path)])),
        (true, false) => Some(quote_spanned!(span=> #[schemars(!default)])),
        (false, false) => None,
    }
}

/// Whether schemars must not see a serde `default` among `attrs` (a field's or the struct's):
/// it would write the default into the schema through the field's serde hook, in code that
/// names the `serde` crate from the user's scope, where it may not be. The field's schema then
/// has no `default` and lists the field as required, as every state the graph gives out has it.
fn hides_default(attrs: &[Attribute], serde_hooked: bool) -> bool {
    serde_hooked && attr_word(attrs, "serde", "default")
}

/// Whether a field already says how serde handles it (its own `with` functions, skipped, or
/// flattened), so the generated hooks would clash with the user's.
fn has_own_serde_hooks(attrs: &[Attribute]) -> bool {
    ["with", "serialize_with", "deserialize_with", "skip", "skip_serializing", "skip_deserializing", "flatten"]
        .iter()
        .any(|word| attr_word(attrs, "serde", word))
}

/// Whether a field already says where its schema comes from (`#[schemars(with = "Type")]` or
/// `schema_with`, or serde's `with`, which schemars reads as a type), or has none (skipped, or
/// flattened into the state's own properties, which takes the type's schema itself).
fn has_own_schema(attrs: &[Attribute]) -> bool {
    ["with", "schema_with", "skip"].iter().any(|word| attr_word(attrs, "schemars", word))
        || ["with", "skip", "flatten"].iter().any(|word| attr_word(attrs, "serde", word))
}

/// Whether one of `attrs` is a `#[{name}(..)]` (`serde`, `schemars`) naming `word`.
fn attr_word(attrs: &[Attribute], name: &str, word: &str) -> bool {
    attrs.iter().filter(|a| a.path().is_ident(name)).any(|a| {
        let mut found = false;
        let _ = a.parse_nested_meta(|meta| {
            found |= meta.path.is_ident(word);
            // Skip a value (`rename = ".."`) so that parsing goes on to the next item.
            if meta.input.peek(syn::Token![=]) {
                meta.value()?.parse::<syn::Expr>()?;
            } else if meta.input.peek(syn::token::Paren) {
                meta.parse_nested_meta(|_| Ok(()))?;
            }
            Ok(())
        });
        found
    })
}

/// Whether a field of the struct is `#[serde(flatten)]`.
fn has_flatten(item: &ItemStruct) -> bool {
    item.fields.iter().any(|f| attr_word(&f.attrs, "serde", "flatten"))
}
