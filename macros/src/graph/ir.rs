//! What the parse phase produces and the later phases read: the graph module's arguments, its
//! nodes, its `#[start]` fns and their edge lists, with the user's tokens and spans kept for errors.

use crate::state::StateDef;
use proc_macro2::{Span, TokenStream};
use syn::{Expr, Ident, ItemFn, ItemMod, Path, ReturnType, Type};

/// `#[graph(context = Ctx, state = Path)]`.
#[derive(Default)]
pub(crate) struct GraphArgs {
    pub(crate) context: Option<Type>,
    pub(crate) state: Option<Path>,
}

/// Where an edge list was written, and its targets as written.
pub(crate) struct Targets {
    /// The key the list was written under (`next` or `send`), for the generated enum's span.
    pub(crate) key: Span,
    pub(crate) names: Vec<Ident>,
    /// `a | b`: alternatives (a branch), rather than `a` or `[a, b]` (static edges).
    pub(crate) alternatives: bool,
}

/// A parsed `#[node(..)]` fn.
pub(crate) struct NodeDef {
    pub(crate) item: ItemFn,
    pub(crate) entry: bool,
    pub(crate) next: Option<Targets>,
    pub(crate) send: Option<Targets>,
    pub(crate) route: Option<Path>,
    pub(crate) join: bool,
    pub(crate) defer: bool,
    /// `subgraph`: the fn returns a graph (a builder or a compiled graph) that runs as the node.
    pub(crate) subgraph: Option<Ident>,
    pub(crate) retry: Option<Expr>,
    pub(crate) timeout: Option<Expr>,
    /// `cache = policy`: the node's outputs are cached under a `CachePolicy`.
    pub(crate) cache: Option<Expr>,
    pub(crate) params: Vec<Param>,
    /// Variants of `{Node}Next` the module's code names but `next` does not declare (each
    /// already reported); the enum declares them too, so rustc does not report them again.
    pub(crate) undeclared_routes: Vec<Ident>,
    /// The `#[node(..)]` attribute as written, for errors about the node as a whole.
    pub(crate) attr: TokenStream,
}

impl NodeDef {
    pub(crate) fn name(&self) -> String {
        self.item.sig.ident.to_string()
    }

    pub(crate) fn ident(&self) -> &Ident {
        &self.item.sig.ident
    }

    /// Whether the node runs as an async node (a subgraph always does).
    pub(crate) fn is_async(&self) -> bool {
        self.item.sig.asyncness.is_some() || self.subgraph.is_some()
    }

    /// `next = a | b` without a router: the node returns the route.
    pub(crate) fn returns_route(&self) -> bool {
        self.branches() && self.route.is_none()
    }

    pub(crate) fn branches(&self) -> bool {
        self.next.as_ref().is_some_and(|t| t.alternatives)
    }

    /// The payload type, if the node takes a Send payload.
    pub(crate) fn payload(&self) -> Option<&Type> {
        self.params.iter().find_map(|p| match p {
            Param::Payload(ty) => Some(&**ty),
            _ => None,
        })
    }

    pub(crate) fn return_span(&self) -> Span {
        match &self.item.sig.output {
            ReturnType::Type(_, ty) => syn::spanned::Spanned::span(&**ty),
            ReturnType::Default => self.item.sig.ident.span(),
        }
    }
}

/// A node parameter, by what the runtime injects into it.
pub(crate) enum Param {
    State,
    Runtime,
    /// `&P`: the Send payload.
    Payload(Box<Type>),
}

/// The module's pieces.
pub(crate) struct GraphDef {
    pub(crate) module: ItemMod,
    pub(crate) state: Option<StateDef>,
    pub(crate) nodes: Vec<NodeDef>,
    /// `#[start]` fns: a router or Sends from START.
    pub(crate) starts: Vec<StartDef>,
}

/// A parsed `#[start(..)]` fn.
pub(crate) struct StartDef {
    pub(crate) item: ItemFn,
    /// `next = a | b`: a router from START.
    pub(crate) next: Option<Targets>,
    /// `send = worker`: Sends from START.
    pub(crate) send: Option<Targets>,
    /// The attribute as written, for errors about it as a whole.
    pub(crate) attr: TokenStream,
}
