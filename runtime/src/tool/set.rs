//! A set of tools, looked up by name.

use super::{Tool, schema};
use serde_json::Value;
use std::fmt;
use std::sync::Arc;

/// The tools a model is offered and a [`ToolNode`](super::ToolNode) runs, in the order they
/// were added. Names are unique: [`insert`](Self::insert) replaces a tool whose name is taken
/// (with a warning), [`try_insert`](Self::try_insert) and [`try_extend`](Self::try_extend) refuse
/// it. Build it with [`tools!`](crate::tools).
///
/// ```
/// use graphwright::prelude::*;
///
/// /// Say hello.
/// #[tool]
/// fn hello() -> &'static str {
///     "hello"
/// }
///
/// /// Say goodbye.
/// #[tool]
/// fn goodbye() -> &'static str {
///     "goodbye"
/// }
///
/// let set = tools![Hello, Goodbye];
/// assert_eq!(set.names().collect::<Vec<_>>(), ["hello", "goodbye"]);
/// assert!(set.get("goodbye").is_some());
/// assert_eq!(set.openai_functions(false).len(), 2);
/// ```
#[derive(Clone, Default)]
pub struct ToolSet {
    tools: Vec<Arc<dyn Tool>>,
}

impl ToolSet {
    /// An empty set.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool (replacing one of the same name).
    #[must_use]
    pub fn with(mut self, tool: impl Tool) -> Self {
        self.insert(Arc::new(tool));
        self
    }

    /// Adds a shared tool (replacing one of the same name).
    pub fn insert(&mut self, tool: Arc<dyn Tool>) {
        match self.tools.iter().position(|t| t.name() == tool.name()) {
            Some(at) => {
                tracing::warn!(tool = tool.name(), "a tool of this name is already in the set; replacing it");
                self.tools[at] = tool;
            }
            None => self.tools.push(tool),
        }
    }

    /// Adds a shared tool unless its name is taken.
    ///
    /// ```
    /// use graphwright::prelude::*;
    ///
    /// /// Say hello.
    /// #[tool]
    /// fn hello() -> &'static str {
    ///     "hello"
    /// }
    ///
    /// let mut set = tools![Hello];
    /// let error = set.try_insert(ToolSet::share(Hello)).unwrap_err();
    /// assert_eq!(error.name, "hello");
    /// assert_eq!(set.len(), 1);
    /// ```
    pub fn try_insert(&mut self, tool: Arc<dyn Tool>) -> Result<(), ToolNameTaken> {
        self.try_extend([tool])
    }

    /// Adds every tool, or none: when a name is taken (by a tool of the set, or by an earlier
    /// tool of `tools`) the set is left as it was.
    pub fn try_extend(&mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Result<(), ToolNameTaken> {
        let tools: Vec<_> = tools.into_iter().collect();
        for (at, tool) in tools.iter().enumerate() {
            let name = tool.name();
            if self.get(name).is_some() || tools[..at].iter().any(|t| t.name() == name) {
                return Err(ToolNameTaken { name: name.to_owned() });
            }
        }
        self.tools.extend(tools);
        Ok(())
    }

    /// The tool called `name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    /// The tools' names, in order.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> {
        self.tools.iter().map(|t| t.name())
    }

    /// The tools, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &Arc<dyn Tool>> {
        self.tools.iter()
    }

    /// How many tools the set holds.
    #[must_use]
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether the set is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Every tool as an OpenAI function ([`schema::openai_function`], or
    /// [`schema::openai_strict_function`] when `strict`).
    #[must_use]
    pub fn openai_functions(&self, strict: bool) -> Vec<Value> {
        let format = if strict { schema::openai_strict_function } else { schema::openai_function };
        self.tools.iter().map(|t| format(t.as_ref())).collect()
    }

    /// Every tool as an Anthropic tool ([`schema::anthropic_tool`]).
    #[must_use]
    pub fn anthropic_tools(&self) -> Vec<Value> {
        self.tools.iter().map(|t| schema::anthropic_tool(t.as_ref())).collect()
    }
}

/// A tool could not join a [`ToolSet`]: the set already has a tool of its name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the tool set already has a tool named `{name}`: rename one of them \
     (tools from an MCP server take a prefix, e.g. `McpClient::stdio(..).prefix(\"fs_\")`)"
)]
pub struct ToolNameTaken {
    /// The name both tools have.
    pub name: String,
}

impl FromIterator<Arc<dyn Tool>> for ToolSet {
    fn from_iter<I: IntoIterator<Item = Arc<dyn Tool>>>(iter: I) -> Self {
        let mut set = Self::new();
        for tool in iter {
            set.insert(tool);
        }
        set
    }
}

impl<'a> IntoIterator for &'a ToolSet {
    type Item = &'a Arc<dyn Tool>;
    type IntoIter = std::slice::Iter<'a, Arc<dyn Tool>>;

    fn into_iter(self) -> Self::IntoIter {
        self.tools.iter()
    }
}

impl fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// Builds a [`ToolSet`](crate::tool::ToolSet) from tool values: `tools![Search, Weather]`.
///
/// Each item is an expression whose type implements [`Tool`](crate::Tool), typically the unit
/// struct `#[tool]` generated.
#[macro_export]
macro_rules! tools {
    ($($tool:expr),* $(,)?) => {
        <$crate::tool::ToolSet as ::core::iter::FromIterator<::std::sync::Arc<dyn $crate::Tool>>>::from_iter([
            $( $crate::tool::ToolSet::share($tool) ),*
        ])
    };
}

impl ToolSet {
    /// A tool as the shared form the set holds; [`tools!`](crate::tools) calls it per item.
    pub fn share(tool: impl Tool) -> Arc<dyn Tool> {
        Arc::new(tool)
    }
}
