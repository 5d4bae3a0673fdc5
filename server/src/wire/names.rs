//! Node names as LangGraph's clients write them: graphwright's [`START`] and [`END`] are
//! `__start__` and `__end__` on the wire, in both directions.

use graphwright::{END, START};

/// The wire's name of LangGraph's first node.
pub(crate) const WIRE_START: &str = "__start__";
/// The wire's name of LangGraph's last node.
pub(crate) const WIRE_END: &str = "__end__";

/// The name clients see for a node of graphwright's.
pub(crate) fn node_to_wire(name: &str) -> &str {
    match name {
        START => WIRE_START,
        END => WIRE_END,
        other => other,
    }
}

/// The graphwright node a client's name stands for.
pub(crate) fn node_from_wire(name: &str) -> &str {
    match name {
        WIRE_START => START,
        WIRE_END => END,
        other => other,
    }
}

/// Every name of `names` as graphwright knows it.
pub(crate) fn nodes_from_wire(names: Vec<String>) -> Vec<String> {
    names.into_iter().map(|name| node_from_wire(&name).to_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_and_end_are_renamed_both_ways_and_other_names_are_kept() {
        assert_eq!(node_to_wire(START), "__start__");
        assert_eq!(node_to_wire(END), "__end__");
        assert_eq!(node_to_wire("agent"), "agent");
        assert_eq!(node_from_wire("__start__"), START);
        assert_eq!(node_from_wire("__end__"), END);
        assert_eq!(node_from_wire("agent"), "agent");
        assert_eq!(nodes_from_wire(vec!["__end__".into(), "tools".into()]), [END, "tools"]);
    }
}
