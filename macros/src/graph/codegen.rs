//! Emitting a checked `#[graph]` module.

use super::case::pascal;
use super::check::{target_names, topology};
use super::imports;
use super::ir::{GraphArgs, GraphDef, NodeDef, Param};
use super::start;
use crate::paths::private;
use crate::state;
use proc_macro2::{Group, Ident, Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned};
use syn::{Item, Type};

/// What the generated items need to know about the graph as a whole.
pub(crate) struct Names {
    pub(crate) state: TokenStream,
    pub(crate) context: TokenStream,
    pub(crate) has_context: bool,
}

impl Names {
    pub(crate) fn new(args: &GraphArgs, def: &GraphDef) -> Option<Self> {
        let state = match (&args.state, &def.state) {
            (Some(path), _) => quote!(#path),
            (None, Some(state)) => {
                let ident = &state.item.ident;
                quote!(#ident)
            }
            (None, None) => return None,
        };
        let context = args.context.as_ref().map_or_else(|| quote!(()), |ty| quote!(#ty));
        Some(Self { state, context, has_context: args.context.is_some() })
    }
}

/// The whole module: the user's items, the state expansion, and the generated items.
/// With `wired` false (the checks failed), only the types are emitted and `graph()` is an
/// empty builder, so that the user's code still type-checks and one mistake gives one error.
pub(crate) fn expand(def: GraphDef, names: Option<&Names>, wired: bool, errors: TokenStream) -> TokenStream {
    let diagram = wired.then(|| diagram(&def));
    let start_enum = names.map(|n| start::start_enum(&def, &n.state));
    let start_calls = if wired { start::builder_calls(&def) } else { Vec::new() };
    let GraphDef { mut module, state, nodes, .. } = def;
    let mut generated = Vec::new();
    if let Some(state) = &state {
        generated.push(state::expand(state));
    }
    if let Some(names) = names {
        generated.push(node_enum(&nodes));
        generated.extend(start_enum);
        for node in &nodes {
            generated.push(next_enum(node, names));
            generated.push(send_enum(node, &nodes));
        }
        if wired {
            for node in nodes.iter().filter(|n| n.subgraph.is_none()) {
                generated.push(wrapper(node, &nodes, names));
            }
        }
        generated.push(graph_fn(&module.ident, &nodes, names, wired, &start_calls));
        if let Some(diagram) = diagram {
            generated.push(quote! {
                /// The graph as a Mermaid flowchart (rendered at compile time).
                #[allow(dead_code)]
                pub const MERMAID: &str = #diagram;
            });
        }
    }
    generated.push(errors);
    if let Some((_, items)) = &mut module.content {
        imports::allow_unused_globs(items);
        items.extend(generated.into_iter().map(Item::Verbatim));
    }
    quote!(#module)
}

fn variant(ident: &Ident) -> Ident {
    Ident::new(&pascal(&ident.to_string()), ident.span())
}

/// `pub enum Node { A, B }`, the graph's node ids. Expands to:
/// `enum Node {..} impl Node { const ALL; fn name(self) -> &'static str }`.
fn node_enum(nodes: &[NodeDef]) -> TokenStream {
    let variants: Vec<Ident> = nodes.iter().map(|n| variant(n.ident())).collect();
    let names: Vec<String> = nodes.iter().map(NodeDef::name).collect();
    let docs = names.iter().map(|n| format!("The node `{n}`."));
    quote! {
        /// The nodes of this graph, for `interrupt_before` and other per-node settings.
        // Generated for every node; a program may name only some of them.
        #[allow(dead_code)]
        #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug,
                 ::core::cmp::PartialEq, ::core::cmp::Eq, ::core::hash::Hash)]
        pub enum Node {
            #( #[doc = #docs] #variants, )*
        }

        impl Node {
            /// Every node, in declaration order.
            pub const ALL: &'static [Node] = &[#(Node::#variants),*];

            /// The node's name.
            #[must_use]
            pub const fn name(self) -> &'static str {
                match self { #( Node::#variants => #names, )* }
            }
        }

        impl ::core::convert::AsRef<str> for Node {
            fn as_ref(&self) -> &str {
                self.name()
            }
        }

        impl ::core::fmt::Display for Node {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(self.name())
            }
        }
    }
}

/// `pub enum {Node}Next { A, B, End }` for a node with `next = a | b | END`. Expands to the
/// enum and `impl Route for {Node}Next { TARGETS = ["a", "b", "END"], index = variant order }`.
fn next_enum(node: &NodeDef, names: &Names) -> TokenStream {
    let Some(targets) = node.next.as_ref().filter(|t| t.alternatives) else {
        return TokenStream::new();
    };
    let p = private();
    let state = &names.state;
    let name = format_ident!("{}Next", pascal(&node.name()), span = node.ident().span());
    // Undeclared routes the code names were reported; declaring them keeps rustc from
    // reporting each again (the graph does not compile either way).
    let mut variants: Vec<Ident> = targets.names.iter().map(variant).collect();
    variants.extend(node.undeclared_routes.iter().cloned());
    let mut strings: Vec<String> = targets.names.iter().map(ToString::to_string).collect();
    strings.extend(node.undeclared_routes.iter().map(ToString::to_string));
    let indices = 0..variants.len();
    let doc = format!("Where the run goes after `{}`.", node.name());
    let docs = strings.iter().map(|t| if t == "END" { "End the run.".to_owned() } else { format!("Run `{t}` next.") });
    // Spanned at `next` (keyword and braces), so that rustc's "not found for this enum" points
    // at the list of targets rather than at `#[graph]`.
    let body = quote!(#( #[doc = #docs] #variants, )*);
    let definition = quote_spanned!(targets.key=> pub enum #name { #body });
    quote! {
        #[doc = #doc]
        // A route a program never returns is still a declared way out of the node.
        #[allow(dead_code)]
        #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug,
                 ::core::cmp::PartialEq, ::core::cmp::Eq, ::core::hash::Hash)]
        #definition

        #[automatically_derived]
        impl #p::Route for #name {
            type State = #state;
            const TARGETS: &'static [&'static str] = &[#(#strings),*];

            fn index(&self) -> usize {
                match self { #( #name::#variants => #indices, )* }
            }
        }
    }
}

/// `pub enum {Node}Send { A(PA), B(PB) }` for a node with `send = a | b`, carrying each
/// target's payload type.
fn send_enum(node: &NodeDef, nodes: &[NodeDef]) -> TokenStream {
    let Some(targets) = node.send.as_ref().filter(|t| t.alternatives) else {
        return TokenStream::new();
    };
    let p = private();
    let name = format_ident!("{}Send", pascal(&node.name()), span = node.ident().span());
    let variants: Vec<Ident> = targets.names.iter().map(variant).collect();
    let payloads: Vec<Type> = targets.names.iter().map(|t| payload_of(nodes, t)).collect();
    let indices = (0..variants.len()).map(|i| i as u32);
    let doc = format!("A payload `{}` sends, addressed to one of its targets.", node.name());
    let docs = targets.names.iter().map(|t| format!("Run `{t}` with this payload."));
    let body = quote!(#( #[doc = #docs] #variants(#payloads), )*);
    let definition = quote_spanned!(targets.key=> pub enum #name { #body });
    quote! {
        #[doc = #doc]
        // A route a program never returns is still a declared way out of the node.
        #[allow(dead_code)]
        #[derive(::core::fmt::Debug)]
        #definition

        #[automatically_derived]
        impl #p::SendRoute for #name {
            fn into_payload(self) -> #p::Payload {
                match self { #( #name::#variants(payload) => #p::Payload::new(#indices, payload), )* }
            }
        }
    }
}

/// The payload type node `target` takes (`()` when it takes none: an error reported elsewhere).
fn payload_of(nodes: &[NodeDef], target: &Ident) -> Type {
    nodes
        .iter()
        .find(|n| n.ident() == target)
        .and_then(NodeDef::payload)
        .cloned()
        .unwrap_or_else(|| syn::parse_quote!(()))
}

/// The node's erased wrapper. For `async fn planner(state: &State) -> (StateUpdate,
/// PlannerNext)` it expands to:
///
/// ```text
/// fn __graphwright_node_planner<'a>(state: &'a State, rt: &'a Runtime<Ctx>, input: Input<'a>)
///     -> NodeFuture<'a, State> {
///     Box::pin(async move { <_ as BranchReturn<PlannerNext>>::into_output(planner(state).await) })
/// }
/// ```
fn wrapper(node: &NodeDef, nodes: &[NodeDef], names: &Names) -> TokenStream {
    let p = private();
    let (state, ctx) = (&names.state, &names.context);
    let user = node.ident();
    let wrapper = format_ident!("__graphwright_node_{}", user);
    let args = node.params.iter().map(|param| match param {
        Param::State => quote!(state),
        Param::Runtime => quote!(rt),
        Param::Payload(_) => quote!(payload),
    });
    let call = if node.is_async() { quote!(#user(#(#args),*).await) } else { quote!(#user(#(#args),*)) };
    let ret_span = node.return_span();
    let convert = respan(conversion(node, nodes, names), ret_span);
    let converted = quote_spanned!(ret_span=> <_ as #convert>::into_output(#call));
    let take_payload = node.payload().map(|ty| {
        quote! {
            let payload: &#ty = match #p::take_payload::<#ty>(input, rt.node()) {
                #p::Result::Ok(payload) => payload,
                #p::Result::Err(error) => return #p::Result::Err(::core::convert::From::from(error)),
            };
        }
    });
    let body = if node.is_async() {
        quote! {
            #p::Box::pin(async move {
                let _ = (&state, &rt, &input);
                #take_payload
                #converted
            })
        }
    } else {
        quote! {
            let _ = (&state, &rt, &input);
            #take_payload
            #converted
        }
    };
    let ret = if node.is_async() { quote!(#p::NodeFuture<'a, #state>) } else { quote!(#p::NodeResult<#state>) };
    quote! {
        #[doc(hidden)]
        #[allow(clippy::needless_lifetimes, clippy::unnecessary_wraps)]
        fn #wrapper<'a>(state: &'a #state, rt: &'a #p::Runtime<#ctx>, input: #p::Input<'a>) -> #ret {
            #body
        }
    }
}

/// `tokens` with every span set to `span`, so that rustc reports a generated path under the
/// user's token rather than under `#[graph]`.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tree| {
            if let TokenTree::Group(group) = &tree {
                let mut inner = Group::new(group.delimiter(), respan(group.stream(), span));
                inner.set_span(span);
                tree = TokenTree::Group(inner);
            }
            tree.set_span(span);
            tree
        })
        .collect()
}

/// The trait that converts this node's return value, chosen by its edges.
fn conversion(node: &NodeDef, nodes: &[NodeDef], names: &Names) -> TokenStream {
    let p = private();
    let state = &names.state;
    if node.returns_route() {
        let route = format_ident!("{}Next", pascal(&node.name()));
        return quote!(#p::BranchReturn<#route>);
    }
    match &node.send {
        Some(targets) if targets.alternatives => {
            let send = format_ident!("{}Send", pascal(&node.name()));
            quote!(#p::MultiSendReturn<#state, #send>)
        }
        Some(targets) => {
            let payload = payload_of(nodes, &targets.names[0]);
            quote!(#p::SendReturn<#state, #payload>)
        }
        None => quote!(#p::UpdateReturn<#state>),
    }
}

/// The node's `Shape` expression.
fn shape(node: &NodeDef, nodes: &[NodeDef]) -> TokenStream {
    let p = private();
    if node.returns_route() {
        let route = format_ident!("{}Next", pascal(&node.name()));
        return quote!(#p::Shape::branch::<#route>());
    }
    if let Some(targets) = &node.send {
        let payloads = targets.names.iter().map(|t| payload_of(nodes, t));
        quote!(#p::Shape::Send { payloads: #p::Vec::from([#( #p::PayloadType::of::<#payloads>() ),*]) })
    } else {
        quote!(#p::Shape::Update)
    }
}

/// `pub fn graph() -> StateGraph<State, Ctx>`: the builder calls the attributes describe.
fn graph_fn(module: &Ident, nodes: &[NodeDef], names: &Names, wired: bool, start_calls: &[TokenStream]) -> TokenStream {
    let p = private();
    let (state, ctx) = (&names.state, &names.context);
    let graph_name = module.to_string();
    let default_context = if names.has_context { quote!(#p::Option::None) } else { quote!(#p::Option::Some(|| ())) };
    let calls = if wired { builder_calls(nodes) } else { Vec::new() };
    let doc = format!("The graph `{graph_name}`, wired as its `#[node]` attributes say. Call `.compile()` to run it.");
    quote! {
        #[doc = #doc]
        #[must_use]
        #[allow(dead_code)]
        pub fn graph() -> #p::StateGraph<#state, #ctx> {
            #p::StateGraph::<#state, #ctx>::with_default_context(#default_context)
                .name(#graph_name)
                #(#calls)*
                #(#start_calls)*
        }
    }
}

fn builder_calls(nodes: &[NodeDef]) -> Vec<TokenStream> {
    let p = private();
    let mut calls = Vec::new();
    for node in nodes {
        let name = node.name();
        if node.subgraph.is_some() {
            // Spanned at the fn's return type: a child whose state does not map to this graph's
            // is reported there.
            let callee = Ident::new(&name, node.return_span());
            if node.returns_route() {
                // `next = a | b` without a router: the subgraph names the target
                // (`Runtime::goto_parent`), among the generated `{Node}Next`.
                let route = format_ident!("{}Next", pascal(&name));
                calls.push(quote_spanned!(node.return_span()=> .add_routed_subgraph::<#route, _, _>(#name, #callee())));
            } else {
                calls.push(quote_spanned!(node.return_span()=> .add_subgraph(#name, #callee())));
            }
            continue;
        }
        let wrapper = format_ident!("__graphwright_node_{}", node.ident());
        let shape = shape(node, nodes);
        let takes = if let Some(ty) = node.payload() {
            quote!(#p::Option::Some(#p::PayloadType::of::<#ty>()))
        } else {
            quote!(#p::Option::None)
        };
        let constructor = if node.is_async() { quote!(asynchronous) } else { quote!(sync) };
        calls.push(quote!(.add_spec(#name, #p::NodeSpec::#constructor(#shape, #takes, #wrapper))));
    }
    for node in nodes.iter().filter(|n| n.entry) {
        let name = node.name();
        calls.push(quote!(.add_edge("START", #name)));
    }
    for node in nodes {
        let name = node.name();
        if let Some(targets) = node.next.as_ref().filter(|t| !t.alternatives) {
            for target in &targets.names {
                let joins = nodes.iter().any(|n| n.ident() == target && n.join);
                if !joins {
                    let target = target.to_string();
                    calls.push(quote!(.add_edge(#name, #target)));
                }
            }
        }
        if let Some(route) = &node.route {
            calls.push(quote_spanned!(syn::spanned::Spanned::span(route)=> .add_router(#name, #route)));
        }
        if let Some(targets) = &node.send {
            for target in &targets.names {
                let target = target.to_string();
                calls.push(quote!(.add_send(#name, #target)));
            }
        }
    }
    for join in nodes.iter().filter(|n| n.join) {
        let target = join.ident();
        let sources = nodes
            .iter()
            .filter(|n| n.next.as_ref().is_some_and(|t| !t.alternatives && t.names.contains(target)))
            .map(NodeDef::name);
        let target = target.to_string();
        calls.push(quote!(.add_join([#(#sources),*], #target)));
    }
    for node in nodes.iter().filter(|n| n.defer || n.retry.is_some() || n.timeout.is_some() || n.cache.is_some()) {
        let name = node.name();
        let mut policy = quote!(#p::NodePolicy::new());
        match &node.retry {
            // `retry = [a, b]`: several policies, the first that accepts an error applies.
            Some(syn::Expr::Array(list)) => {
                for retry in &list.elems {
                    policy = quote!(#policy.retry(#retry));
                }
            }
            Some(retry) => policy = quote!(#policy.retry(#retry)),
            None => {}
        }
        if let Some(timeout) = &node.timeout {
            policy = quote!(#policy.timeout(#timeout));
        }
        if node.defer {
            policy = quote!(#policy.defer());
        }
        if let Some(cache) = &node.cache {
            policy = quote!(#policy.cache(#cache));
        }
        calls.push(quote!(.policy(#name, #policy)));
    }
    calls
}

/// The graph as a Mermaid flowchart, rendered while compiling.
fn diagram(def: &GraphDef) -> String {
    let (names, targets) = target_names(def);
    let graph = def.module.ident.to_string();
    let mut topology = topology(def, &names, &targets);
    topology.graph = &graph;
    graphwright_wiring::mermaid(&topology)
}
