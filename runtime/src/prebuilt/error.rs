//! What makes a prebuilt agent fail.

/// Why a prebuilt agent stopped with an error (the node's error inside
/// [`GraphError::Node`](crate::GraphError::Node)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The model was called `limit` times in one turn and still asked for tools.
    #[error(
        "agent `{agent}` called its model {limit} times in this turn without a final answer; \
         raise `step_limit` if the task needs more rounds of tools, or check what the tools answer"
    )]
    StepLimit {
        /// The agent.
        agent: String,
        /// Its step limit.
        limit: u32,
    },
    /// A post-model hook refused the model's reply.
    #[error("agent `{agent}` refused the model's reply: {reason}")]
    Refused {
        /// The agent.
        agent: String,
        /// What the hook said.
        reason: String,
    },
    /// A team was built with agents that cannot work together.
    #[error("the team cannot be built: {0}")]
    Team(String),
}
