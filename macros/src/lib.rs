//! Placeholder while the macros are written.
use proc_macro::TokenStream;
#[proc_macro_attribute]
pub fn graph(_a: TokenStream, i: TokenStream) -> TokenStream { i }
#[proc_macro_attribute]
pub fn state(_a: TokenStream, i: TokenStream) -> TokenStream { i }
#[proc_macro_attribute]
pub fn node(_a: TokenStream, i: TokenStream) -> TokenStream { i }
