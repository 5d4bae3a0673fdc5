//! One check item per `#[state]` field: its type must be `Serialize` and `Deserialize`.
//!
//! The derives on the state would report a type without them too, but from serde's generated
//! code, under `#[graph]`, with a list of every type that does implement the trait. The check
//! names the type once, under the type the user wrote, through a runtime trait whose
//! `#[diagnostic::on_unimplemented]` message says what to derive. It is emitted before the
//! state's expansion so that its error is the first one rustc prints.

use crate::paths::private;
use crate::state::StateDef;
use proc_macro2::TokenStream;
use quote::quote_spanned;
use syn::spanned::Spanned;

/// Expands, for `pub plan: Plan`, to `const _: () = ::graphwright::__private::state_field::<Plan>();`,
/// spanned at `Plan`.
pub(crate) fn expand(def: &StateDef) -> TokenStream {
    if !def.item.generics.params.is_empty() {
        return TokenStream::new(); // reported by `state::parse`
    }
    let p = private();
    def.fields
        .iter()
        .map(|field| {
            let ty = &field.ty;
            quote_spanned!(ty.span()=> const _: () = #p::state_field::<#ty>();)
        })
        .collect()
}
