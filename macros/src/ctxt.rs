//! Collects errors so the user sees every problem at once, folded into one `syn::Error`.

use proc_macro2::TokenStream;
use quote::ToTokens;
use std::fmt::Display;

/// An error collector.
#[derive(Default)]
pub(crate) struct Ctxt {
    errors: Option<syn::Error>,
}

impl Ctxt {
    /// Records an error at the span of `tokens`.
    pub(crate) fn error_spanned_by(&mut self, tokens: impl ToTokens, message: impl Display) {
        self.push(syn::Error::new_spanned(tokens.into_token_stream(), message));
    }

    /// Records a parse error.
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.errors {
            Some(errors) => errors.combine(error),
            None => self.errors = Some(error),
        }
    }

    /// Whether anything was recorded.
    pub(crate) fn has_errors(&self) -> bool {
        self.errors.is_some()
    }

    /// The recorded errors as `compile_error!` invocations (empty when there are none).
    pub(crate) fn into_compile_errors(self) -> TokenStream {
        self.errors.map(|e| e.to_compile_error()).unwrap_or_default()
    }
}
