//! `#[state]`: the state struct, its update type, and the reducer wiring.

mod derives;

use crate::ctxt::Ctxt;
use crate::paths::private;
use derives::{serde_hooks, with_derives};
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Attribute, Fields, Ident, ItemStruct, Meta, Path, Type};

/// The reducers `#[reducer(..)]` accepts, for suggestions and the error listing them.
const REDUCERS: &[&str] = &["add", "append", "messages", "merge", "union", "max", "min", "with"];

/// How one field folds its writes.
pub(crate) enum Reducer {
    LastValue,
    /// One of the named reducers; the span is the user's word, for errors.
    Named(&'static str),
    With(Path),
}

/// One field of a state struct.
pub(crate) struct Field {
    pub(crate) ident: Ident,
    pub(crate) ty: Type,
    pub(crate) reducer: Reducer,
}

/// A parsed `#[state]` struct: its name and fields, with `#[reducer]` attributes stripped.
pub(crate) struct StateDef {
    pub(crate) item: ItemStruct,
    pub(crate) fields: Vec<Field>,
}

impl StateDef {
    /// The update type's name: `{State}Update`.
    pub(crate) fn update_ident(&self) -> Ident {
        format_ident!("{}Update", self.item.ident)
    }

    /// The name of the update's fields, behind its box: `{State}Writes`.
    pub(crate) fn writes_ident(&self) -> Ident {
        format_ident!("{}Writes", self.item.ident)
    }
}

/// Parses a `#[state]` struct, recording problems in `cx`.
pub(crate) fn parse(cx: &mut Ctxt, mut item: ItemStruct) -> StateDef {
    if !item.generics.params.is_empty() {
        cx.error_spanned_by(&item.generics, "a `#[state]` struct cannot be generic: name concrete field types");
    }
    let mut fields = Vec::new();
    match &mut item.fields {
        Fields::Named(named) => {
            for field in &mut named.named {
                let reducer = take_reducer(cx, &mut field.attrs);
                if let Some(ident) = &field.ident {
                    fields.push(Field { ident: ident.clone(), ty: field.ty.clone(), reducer });
                }
            }
        }
        other => cx.error_spanned_by(
            &*other,
            "a `#[state]` struct needs named fields: each field is a channel with its own reducer",
        ),
    }
    StateDef { item, fields }
}

/// Removes the field's `#[reducer(..)]` attribute and reads it.
fn take_reducer(cx: &mut Ctxt, attrs: &mut Vec<Attribute>) -> Reducer {
    let mut reducer = Reducer::LastValue;
    let mut seen = false;
    attrs.retain(|attr| {
        if !attr.path().is_ident("reducer") {
            return true;
        }
        if seen {
            cx.error_spanned_by(attr, "a field takes one `#[reducer(..)]`: remove this one");
        }
        seen = true;
        reducer = parse_reducer(cx, attr);
        false
    });
    reducer
}

fn parse_reducer(cx: &mut Ctxt, attr: &Attribute) -> Reducer {
    let Meta::List(list) = &attr.meta else {
        cx.error_spanned_by(attr, format!("write the reducer in parentheses, e.g. `#[reducer(append)]`; {}", known()));
        return Reducer::LastValue;
    };
    if let Ok(syn::MetaNameValue { path, value, .. }) = list.parse_args::<syn::MetaNameValue>()
        && path.is_ident("with")
    {
        if let syn::Expr::Path(f) = value {
            return Reducer::With(f.path);
        }
        cx.error_spanned_by(value, "`with = ..` takes the path of a `fn(&mut T, T)`");
        return Reducer::LastValue;
    }
    if let Ok(word) = list.parse_args::<Ident>() {
        let name = word.to_string();
        if let Some(known) = REDUCERS.iter().find(|r| **r == name && **r != "with") {
            Reducer::Named(known)
        } else {
            let hint = graphwright_wiring::closest(&name, REDUCERS.iter().copied())
                .map(|near| format!("; did you mean `{near}`?"))
                .unwrap_or_default();
            cx.error_spanned_by(&word, format!("unknown reducer `{name}`{hint} {}", known()));
            Reducer::LastValue
        }
    } else {
        cx.error_spanned_by(&list.tokens, format!("expected one reducer name; {}", known()));
        Reducer::LastValue
    }
}

fn known() -> String {
    "(known reducers: `add`, `append`, `messages`, `merge`, `union`, `max`, `min`, `with = path::to::fn`)".to_owned()
}

/// Emits the state struct with its derives, the update type, and the trait impls.
pub(crate) fn expand(def: &StateDef) -> TokenStream {
    if !def.item.generics.params.is_empty() {
        // Reported by `parse`; generating impls for a generic struct would only add errors.
        let item = &def.item;
        return quote!(#item);
    }
    let p = private();
    let item = with_derives(&def.item);
    let name = &def.item.ident;
    let update = def.update_ident();
    let writes = def.writes_ident();
    let idents: Vec<&Ident> = def.fields.iter().map(|f| &f.ident).collect();
    let names: Vec<String> = idents.iter().map(|i| unraw(i)).collect();
    let (message_fields, fill_ids) = message_support(def);
    let encode_stored = encode_stored(def);
    let folds = def.fields.iter().map(fold);
    let step_folds = def.fields.iter().map(fold_step);
    let last_value = def.fields.iter().map(|f| matches!(f.reducer, Reducer::LastValue));
    let update_type = update_type(def);
    let subgraph_impls = subgraph_impls(def);
    quote! {
        #item

        #update_type

        #[automatically_derived]
        impl ::core::convert::From<#name> for #update {
            fn from(state: #name) -> Self {
                Self::from(#writes { #( #idents: #p::Option::Some(#p::Write::Reduce(state.#idents)), )* })
            }
        }

        #subgraph_impls

        #[automatically_derived]
        impl #p::State for #name {
            type Update = #update;
            const FIELDS: &'static [&'static str] = &[#(#names),*];
            const MESSAGE_FIELDS: &'static [&'static str] = &[#(#message_fields),*];

            fn apply_mut(&mut self, update: &mut #update) {
                #(#folds)*
            }

            fn apply_step(&mut self, updates: &mut [&mut #update]) {
                #(#step_folds)*
            }

            fn conflict(updates: &[&#update]) -> #p::Option<#p::Conflict> {
                #(
                    if let #p::Option::Some(conflict) = #p::conflict(
                        #names,
                        #last_value,
                        updates.iter().map(|u| u.#idents.as_ref().map(#p::Write::is_overwrite)),
                    ) {
                        return #p::Option::Some(conflict);
                    }
                )*
                #p::Option::None
            }
        }

        #[automatically_derived]
        impl #p::Update for #update {
            type State = #name;

            fn is_empty(&self) -> bool {
                true #( && self.#idents.is_none() )*
            }

            #encode_stored
            #fill_ids
        }
    }
}

/// The update type: `{State}Writes` (one `Option<Write<T>>` per field, the stored form) and
/// `{State}Update`, a box of it with one setter per field that dereferences to it.
fn update_type(def: &StateDef) -> TokenStream {
    let p = private();
    let vis = &def.item.vis;
    let name = &def.item.ident;
    let update = def.update_ident();
    let writes = def.writes_ident();
    let idents: Vec<&Ident> = def.fields.iter().map(|f| &f.ident).collect();
    let types: Vec<&Type> = def.fields.iter().map(|f| &f.ty).collect();
    let names: Vec<String> = idents.iter().map(|i| unraw(i)).collect();
    let setter_docs = def.fields.iter().map(setter_doc);
    let field_docs = names.iter().map(|n| format!("The write of `{n}`, if this update writes it."));
    let write_hooks = def.fields.iter().map(|f| serde_hooks(&f.ty, "serialize_write", "deserialize_write"));
    let update_doc = format!(
        "A partial update of [`{name}`]: each field the node writes, folded in with that field's reducer.\n\n\
         Built with one setter per field (`{update}::new().field(value)`); its writes are read \
         through [`{writes}`], which it dereferences to. The writes live on the heap, so the update \
         is one pointer wide however many fields the state has: a builder chain and every hand-over \
         in a run move a pointer, not kilobytes."
    );
    let writes_doc = format!("The writes of a [`{update}`], one `Option` per field of [`{name}`].");
    let debug_name = update.to_string();
    // Spanned at the state's name (keyword and braces), so that rustc's "not found for this
    // struct" points at the state the user wrote rather than at the macro.
    let body = quote! {
        #(
            #[doc = #field_docs]
            #[serde(default, skip_serializing_if = "::core::option::Option::is_none")]
            #write_hooks
            #vis #idents: #p::Option<#p::Write<#types>>,
        )*
    };
    let writes_definition = quote_spanned!(name.span()=> #vis struct #writes { #body });
    let definition = quote_spanned!(name.span()=> #vis struct #update(#p::Box<#writes>););
    quote! {
        #[doc = #writes_doc]
        #[derive(::core::clone::Clone, ::core::default::Default, #p::serde::Serialize, #p::serde::Deserialize)]
        #[serde(crate = "::graphwright::__private::serde", deny_unknown_fields)]
        #writes_definition

        #[automatically_derived]
        impl ::core::fmt::Debug for #writes {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.debug_struct(#debug_name) #( .field(#names, &self.#idents) )* .finish()
            }
        }

        #[doc = #update_doc]
        #[derive(::core::clone::Clone, ::core::default::Default, #p::serde::Serialize, #p::serde::Deserialize)]
        #[serde(crate = "::graphwright::__private::serde", transparent)]
        #definition

        #[automatically_derived]
        impl ::core::fmt::Debug for #update {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                ::core::fmt::Debug::fmt(&*self.0, f)
            }
        }

        #[automatically_derived]
        impl ::core::ops::Deref for #update {
            type Target = #writes;
            fn deref(&self) -> &#writes {
                &self.0
            }
        }

        #[automatically_derived]
        impl ::core::ops::DerefMut for #update {
            fn deref_mut(&mut self) -> &mut #writes {
                &mut self.0
            }
        }

        #[automatically_derived]
        impl ::core::convert::From<#writes> for #update {
            fn from(writes: #writes) -> Self {
                Self(#p::Box::new(writes))
            }
        }

        impl #update {
            /// An update that writes nothing.
            #[must_use]
            #vis fn new() -> Self {
                <Self as ::core::default::Default>::default()
            }
            #(
                #[doc = #setter_docs]
                #[must_use]
                #vis fn #idents(mut self, value: impl ::core::convert::Into<#p::Write<#types>>) -> Self {
                    self.#idents = #p::Option::Some(::core::convert::Into::into(value));
                    self
                }
            )*
        }
    }
}

/// `FullUpdate` (every field overwritten) and `SubgraphState<Self>` (a subgraph of the same
/// state starts from the parent's and writes back every field it ends with).
fn subgraph_impls(def: &StateDef) -> TokenStream {
    let p = private();
    let name = &def.item.ident;
    let update = def.update_ident();
    let writes = def.writes_ident();
    let idents: Vec<_> = def.fields.iter().map(|f| &f.ident).collect();
    quote! {
        #[automatically_derived]
        impl #p::FullUpdate for #name {
            fn full_update(self) -> #update {
                #update::from(#writes { #( #idents: #p::Option::Some(#p::Write::Overwrite(self.#idents)), )* })
            }
        }

        #[automatically_derived]
        impl #p::SubgraphState<#name> for #name {
            fn enter(parent: &#name) -> Self {
                ::core::clone::Clone::clone(parent)
            }

            fn leave(self) -> #update {
                <Self as #p::FullUpdate>::full_update(self)
            }
        }
    }
}

/// The update's stored form written field by field (`Update::encode_stored`), the bytes its
/// derived `Serialize` gives the checkpoint codec: a map of the fields it writes, each a key and
/// the pair `[tag, value]`. Expands to:
/// `fn encode_stored(&self, out) -> bool { let start = out.len(); let mut fields = 0;
/// if let Some(write) = &self.f { fields += 1; out.extend_from_slice(b"\xa1f");
/// if !<T as StateField>::encode_write(write, out) { return false; } } ..
/// encode_update_header(out, start, fields); true }`.
fn encode_stored(def: &StateDef) -> TokenStream {
    let p = private();
    let idents = def.fields.iter().map(|f| &f.ident);
    let types = def.fields.iter().map(|f| &f.ty);
    let keys = def.fields.iter().map(|f| stored_key(&unraw(&f.ident)));
    quote! {
        fn encode_stored(&self, out: &mut #p::Vec<u8>) -> bool {
            let start = out.len();
            let mut fields = 0;
            #(
                if let #p::Option::Some(write) = &self.#idents {
                    fields += 1;
                    out.extend_from_slice(#keys);
                    if !<#types as #p::StateField>::encode_write(write, out) {
                        return false;
                    }
                }
            )*
            #p::encode_update_header(out, start, fields);
            true
        }
    }
}

/// A field's name as the key serde writes for it in a stored (`MessagePack`) update: a string
/// marker with its length, then the bytes. Expands to a byte string literal, e.g. `b"\xa5count"`.
fn stored_key(name: &str) -> syn::LitByteStr {
    let len = name.len();
    let mut key = Vec::with_capacity(len + 5);
    // fixstr, str8, str16, str32: the smallest marker that holds the length, as `rmp` writes it.
    if len < 32 {
        key.push(0xa0 | len as u8);
    } else if let Ok(len) = u8::try_from(len) {
        key.extend_from_slice(&[0xd9, len]);
    } else if let Ok(len) = u16::try_from(len) {
        key.push(0xda);
        key.extend_from_slice(&len.to_be_bytes());
    } else {
        key.push(0xdb);
        key.extend_from_slice(&(len as u32).to_be_bytes());
    }
    key.extend_from_slice(name.as_bytes());
    syn::LitByteStr::new(&key, proc_macro2::Span::call_site())
}

/// Folds one field's writes of a whole step: expands to
/// `fold_step(&mut self.f, updates, |u| &mut u.f, |current, value| <reducer>)`.
fn fold_step(field: &Field) -> TokenStream {
    let p = private();
    let f = &field.ident;
    let reduce = reduce_into(field, &quote!(*current));
    quote! {
        #p::fold_step(&mut self.#f, updates, |u| &mut u.#f, |current, value| { #reduce; });
    }
}

/// The call that folds `value` into `target` with the field's reducer. It carries the field
/// type's span, so a reducer that cannot fold the type is reported under the type the user wrote.
fn reduce_into(field: &Field, target: &TokenStream) -> TokenStream {
    let p = private();
    let ty = &field.ty;
    let span = ty.span();
    match &field.reducer {
        Reducer::LastValue => quote!(#target = value),
        Reducer::Named(name) => {
            let (tr, method) = match *name {
                "add" => (quote!(AddReducer), quote!(reduce)),
                "append" => (quote!(AppendReducer), quote!(reduce)),
                "messages" => (quote!(MessagesReducer), quote!(reduce)),
                "merge" => (quote!(MergeReducer), quote!(reduce)),
                "union" => (quote!(UnionReducer), quote!(reduce)),
                "max" => (quote!(OrdReducer), quote!(max)),
                _ => (quote!(OrdReducer), quote!(min)),
            };
            quote_spanned!(span=> <#ty as #p::#tr>::#method(&mut #target, value))
        }
        Reducer::With(path) => quote_spanned!(path.span()=> #path(&mut #target, value)),
    }
}

/// Folds one field's write: expands to
/// `if let Some(w) = update.f.take() { match w { Reduce(v) => <reducer>, Overwrite(v) => self.f = v } }`.
/// The reducer call carries the field type's span, so a reducer that cannot fold the type is
/// reported under the type the user wrote.
fn fold(field: &Field) -> TokenStream {
    let p = private();
    let f = &field.ident;
    let reduce = reduce_into(field, &quote!(self.#f));
    quote! {
        if let #p::Option::Some(write) = update.#f.take() {
            match write {
                #p::Write::Reduce(value) => { #reduce; }
                #p::Write::Overwrite(value) => self.#f = value,
            }
        }
    }
}

fn unraw(ident: &Ident) -> String {
    ident.to_string().trim_start_matches("r#").to_owned()
}

/// `#[state]` used on its own, outside a `#[graph]` module.
pub(crate) fn expand_attribute(args: &TokenStream, input: &TokenStream) -> TokenStream {
    let mut cx = Ctxt::default();
    if !args.is_empty() {
        cx.error_spanned_by(args, "`#[state]` takes no arguments; put reducers on fields with `#[reducer(..)]`");
    }
    let Ok(item) = syn::parse2::<ItemStruct>(input.clone()) else {
        let error = syn::Error::new_spanned(input, "`#[state]` goes on a struct with named fields");
        let error = error.to_compile_error();
        return quote!(#error #input);
    };
    let def = parse(&mut cx, item);
    let expanded = expand(&def);
    let errors = cx.into_compile_errors();
    quote!(#expanded #errors)
}

/// Whether a field's type is `Message`, `Vec<Message>` or `Option<Message>` (by the last path
/// segment, so `graphwright::Message` counts too).
fn holds_messages(ty: &Type) -> bool {
    let Type::Path(path) = ty else { return false };
    let Some(last) = path.path.segments.last() else { return false };
    if last.ident == "Message" {
        return true;
    }
    if last.ident != "Vec" && last.ident != "Option" {
        return false;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else { return false };
    matches!(args.args.first(), Some(syn::GenericArgument::Type(Type::Path(inner)))
        if inner.path.segments.last().is_some_and(|s| s.ident == "Message"))
}

/// `State::MESSAGE_FIELDS` (fields declared with a message type) and `Update::fill_ids` (ids for
/// the messages a `messages` reducer adds, before the update is stored).
fn message_support(def: &StateDef) -> (Vec<String>, Option<TokenStream>) {
    let p = private();
    let fields = def.fields.iter().filter(|f| holds_messages(&f.ty)).map(|f| unraw(&f.ident)).collect();
    let with_ids: Vec<&Ident> =
        def.fields.iter().filter(|f| matches!(f.reducer, Reducer::Named("messages"))).map(|f| &f.ident).collect();
    let fill_ids = (!with_ids.is_empty()).then(|| {
        quote! {
            fn fill_ids(&mut self) {
                #(
                    if let #p::Option::Some(#p::Write::Reduce(value)) = &mut self.#with_ids {
                        #p::MessagesReducer::fill_ids(value);
                    }
                )*
            }
        }
    });
    (fields, fill_ids)
}

/// The doc comment of a field's setter on the update type.
fn setter_doc(f: &Field) -> String {
    let how = match &f.reducer {
        Reducer::LastValue => "replaces the value; one write per step".to_owned(),
        Reducer::Named(r) => format!("folded with the `{r}` reducer"),
        Reducer::With(path) => format!("folded with `{}`", quote!(#path).to_string().replace(' ', "")),
    };
    format!("Writes `{}` ({how}). Wrap the value in `Overwrite(..)` to replace it outright.", unraw(&f.ident))
}
