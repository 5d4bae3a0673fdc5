//! [`ToolInstruments`]: the tool-call counter and duration histogram, bound to each tool and
//! outcome the first time a call of it ends.

use opentelemetry::KeyValue;
use opentelemetry::metrics::{BoundCounter, BoundHistogram, Counter, Histogram};
use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

/// `graphwright.tool.calls` and `graphwright.tool.duration`, with their handles bound to each
/// (tool, outcome) seen. A tool call is reported on the run's own thread: through a bound handle
/// it costs one lookup here and no hashing of its attributes in the SDK, where an unbound
/// record hashes them for each instrument (the larger part of what metrics cost a `ReAct` turn).
///
/// Handles are kept for as long as the instruments: tool names are bounded by the tools a
/// program has (a call to one that does not exist is counted as `unknown`), and error kinds by
/// the crate's.
#[derive(Debug)]
pub(super) struct ToolInstruments {
    calls: Counter<u64>,
    duration: Histogram<f64>,
    bound: RwLock<ByTool>,
}

/// The bound handles by tool name. Hashed with foldhash: `SipHash` of a short name was half of
/// what finding the handles cost a call, and the names are the program's own tools' (its seed
/// is random per map all the same).
type ByTool = HashMap<Box<str>, Vec<Bound>, foldhash::fast::RandomState>;

/// The instruments bound to the calls of one tool that ended one way.
#[derive(Debug)]
struct Bound {
    /// `None` for the calls that succeeded, else the error's kind.
    error: Option<&'static str>,
    calls: BoundCounter<u64>,
    duration: BoundHistogram<f64>,
}

impl ToolInstruments {
    pub(super) fn new(calls: Counter<u64>, duration: Histogram<f64>) -> Self {
        Self { calls, duration, bound: RwLock::default() }
    }

    /// Reports a call to `tool` that took `seconds` and ended as `error` says.
    pub(super) fn record(&self, tool: &str, error: Option<&'static str>, seconds: f64) {
        let report = |bound: &Bound| {
            bound.calls.add(1);
            bound.duration.record(seconds);
        };
        if let Some(bound) = find(&self.bound.read().unwrap_or_else(PoisonError::into_inner), tool, error) {
            report(bound);
            return;
        }
        let mut by_tool = self.bound.write().unwrap_or_else(PoisonError::into_inner);
        // Bound by another thread between the two locks.
        if let Some(bound) = find(&by_tool, tool, error) {
            report(bound);
            return;
        }
        let name = KeyValue::new("gen_ai.tool.name", Arc::<str>::from(tool));
        let outcome = KeyValue::new("graphwright.tool.outcome", error.unwrap_or("ok"));
        let attributes = match error {
            None => vec![name, outcome],
            Some(kind) => vec![name, outcome, KeyValue::new("error.type", kind)],
        };
        let bound = Bound { error, calls: self.calls.bind(&attributes), duration: self.duration.bind(&attributes) };
        report(&bound);
        by_tool.entry(tool.into()).or_default().push(bound);
    }
}

fn find<'a>(by_tool: &'a ByTool, tool: &str, error: Option<&'static str>) -> Option<&'a Bound> {
    by_tool.get(tool)?.iter().find(|bound| bound.error == error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::metrics::MeterProvider as _;
    use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
    use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
    use std::collections::BTreeMap;

    /// Instruments of a provider that exports to memory.
    fn instruments() -> (ToolInstruments, SdkMeterProvider, InMemoryMetricExporter) {
        let exporter = InMemoryMetricExporter::default();
        let provider =
            SdkMeterProvider::builder().with_reader(PeriodicReader::builder(exporter.clone()).build()).build();
        let meter = provider.meter("test");
        let instruments = ToolInstruments::new(
            meter.u64_counter("calls").build(),
            meter.f64_histogram("duration").with_boundaries(vec![1.0]).build(),
        );
        (instruments, provider, exporter)
    }

    /// Each point exported: the instrument, its attributes as sorted `key=value` text, and the
    /// counter's sum or the histogram's count and sum.
    fn exported(provider: &SdkMeterProvider, exporter: &InMemoryMetricExporter) -> BTreeMap<(String, String), String> {
        provider.force_flush().unwrap();
        let mut points = BTreeMap::new();
        let batches = exporter.get_finished_metrics().unwrap();
        for metric in batches
            .last()
            .expect("an export")
            .scope_metrics()
            .flat_map(opentelemetry_sdk::metrics::data::ScopeMetrics::metrics)
        {
            let key = |attributes: &mut dyn Iterator<Item = &KeyValue>| {
                let mut text: Vec<String> = attributes.map(|kv| format!("{}={}", kv.key, kv.value)).collect();
                text.sort();
                (metric.name().to_owned(), text.join(","))
            };
            match metric.data() {
                AggregatedMetrics::U64(MetricData::Sum(sum)) => {
                    for p in sum.data_points() {
                        points.insert(key(&mut p.attributes()), p.value().to_string());
                    }
                }
                AggregatedMetrics::F64(MetricData::Histogram(histogram)) => {
                    for p in histogram.data_points() {
                        points.insert(key(&mut p.attributes()), format!("{} in {}", p.count(), p.sum()));
                    }
                }
                other => panic!("unexpected {}: {other:?}", metric.name()),
            }
        }
        points
    }

    fn point(name: &str, attributes: &str, value: &str) -> ((String, String), String) {
        ((name.to_owned(), attributes.to_owned()), value.to_owned())
    }

    #[test]
    fn calls_are_counted_and_timed_by_tool_and_outcome() {
        let (instruments, provider, exporter) = instruments();
        for _ in 0..3 {
            instruments.record("search", None, 0.5);
        }
        instruments.record("search", Some("timeout"), 2.0);
        instruments.record("add", None, 0.25);

        let ok = |tool: &str| format!("gen_ai.tool.name={tool},graphwright.tool.outcome=ok");
        let timeout = "error.type=timeout,gen_ai.tool.name=search,graphwright.tool.outcome=timeout";
        let expected = BTreeMap::from([
            point("calls", &ok("add"), "1"),
            point("calls", &ok("search"), "3"),
            point("calls", timeout, "1"),
            point("duration", &ok("add"), "1 in 0.25"),
            point("duration", &ok("search"), "3 in 1.5"),
            point("duration", timeout, "1 in 2"),
        ]);
        assert_eq!(exported(&provider, &exporter), expected);
    }

    #[test]
    fn calls_from_many_threads_add_up() {
        let (instruments, provider, exporter) = instruments();
        let instruments = Arc::new(instruments);
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let instruments = Arc::clone(&instruments);
                std::thread::spawn(move || {
                    for i in 0..1000 {
                        instruments.record("lookup", (i % 2 == 1).then_some("failed"), 1.0);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let points = exported(&provider, &exporter);
        let counts: Vec<&str> =
            points.iter().filter(|((name, _), _)| name == "calls").map(|(_, v)| v.as_str()).collect();
        assert_eq!(counts, ["2000", "2000"]);
    }
}
