//! [`ToolTally`]: tool calls counted by tool and outcome in the process, for an observable
//! counter to report when the meter collects.

use opentelemetry::metrics::AsyncInstrument;
use opentelemetry::{KeyValue, StringValue};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

/// Counts of tool calls. A call is counted with one lookup and one atomic add, where the SDK's
/// counter would hash the call's attributes again after the duration histogram has: a tool
/// call is reported on the run's own thread, and that second hashing was a third of what
/// metrics cost a `ReAct` turn.
#[derive(Debug, Default)]
pub(super) struct ToolTally {
    tools: RwLock<HashMap<Box<str>, Tool>>,
}

/// The calls to one tool.
#[derive(Debug)]
struct Tool {
    /// The tool's name as an attribute value, made once: reports share it instead of copying it.
    name: StringValue,
    /// By how the calls ended: `None` for those that succeeded, else the error's kind.
    counts: Vec<(Option<&'static str>, AtomicU64)>,
}

impl ToolTally {
    /// Counts a call to `tool` that ended as `error` says; gives back the tool's name as an
    /// attribute value.
    pub(super) fn count(&self, tool: &str, error: Option<&'static str>) -> StringValue {
        {
            let tools = self.tools.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(known) = tools.get(tool)
                && let Some((_, count)) = known.counts.iter().find(|(e, _)| *e == error)
            {
                count.fetch_add(1, Ordering::Relaxed);
                return known.name.clone();
            }
        }
        let mut tools = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        let known = tools
            .entry(tool.into())
            .or_insert_with(|| Tool { name: StringValue::from(Arc::<str>::from(tool)), counts: Vec::new() });
        match known.counts.iter().find(|(e, _)| *e == error) {
            // Counted by another thread between the two locks.
            Some((_, count)) => {
                count.fetch_add(1, Ordering::Relaxed);
            }
            None => known.counts.push((error, AtomicU64::new(1))),
        }
        known.name.clone()
    }

    /// Reports every count so far to `counter`, with the attributes `graphwright.tool.calls`
    /// carries.
    pub(super) fn observe(&self, counter: &dyn AsyncInstrument<u64>) {
        let tools = self.tools.read().unwrap_or_else(PoisonError::into_inner);
        for tool in tools.values() {
            for (error, count) in &tool.counts {
                let calls = count.load(Ordering::Relaxed);
                let name = KeyValue::new("gen_ai.tool.name", tool.name.clone());
                let outcome = KeyValue::new("graphwright.tool.outcome", error.unwrap_or("ok"));
                match error {
                    None => counter.observe(calls, &[name, outcome]),
                    Some(kind) => counter.observe(calls, &[name, outcome, KeyValue::new("error.type", *kind)]),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// What a collection saw: each count with its attributes as `key=value` text.
    #[derive(Default)]
    struct Seen(Mutex<Vec<(u64, Vec<String>)>>);

    impl AsyncInstrument<u64> for Seen {
        fn observe(&self, measurement: u64, attributes: &[KeyValue]) {
            let attributes = attributes.iter().map(|kv| format!("{}={}", kv.key, kv.value)).collect();
            self.0.lock().unwrap().push((measurement, attributes));
        }
    }

    #[test]
    fn calls_are_counted_by_tool_and_outcome() {
        let tally = ToolTally::default();
        for _ in 0..3 {
            tally.count("search", None);
        }
        tally.count("search", Some("timeout"));
        let name = tally.count("add", None);
        assert_eq!(name.as_str(), "add");

        let seen = Seen::default();
        tally.observe(&seen);
        let mut seen = seen.0.into_inner().unwrap();
        seen.sort();
        let ok = |tool: &str| vec![format!("gen_ai.tool.name={tool}"), "graphwright.tool.outcome=ok".to_owned()];
        let timeout = vec![
            "gen_ai.tool.name=search".to_owned(),
            "graphwright.tool.outcome=timeout".to_owned(),
            "error.type=timeout".to_owned(),
        ];
        assert_eq!(seen, [(1, ok("add")), (1, timeout), (3, ok("search"))]);
    }

    #[test]
    fn counts_from_many_threads_add_up() {
        let tally = Arc::new(ToolTally::default());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let tally = Arc::clone(&tally);
                std::thread::spawn(move || {
                    for i in 0..1000 {
                        tally.count("lookup", (i % 2 == 1).then_some("failed"));
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let seen = Seen::default();
        tally.observe(&seen);
        let counts: Vec<u64> = seen.0.into_inner().unwrap().into_iter().map(|(n, _)| n).collect();
        assert_eq!(counts, [2000, 2000]);
    }
}
