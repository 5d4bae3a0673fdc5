//! Absolute paths to runtime items, so generated code works whatever the user imported.

use proc_macro2::TokenStream;
use quote::quote;

/// `::graphwright::__private`
pub(crate) fn private() -> TokenStream {
    quote!(::graphwright::__private)
}
