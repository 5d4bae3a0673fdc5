//! `OtelMetrics` (feature `otel`): runs, model calls and tool calls of real runs, read back from
//! the OpenTelemetry SDK's in-memory exporter with their exact values and attributes.
//!
//! Every test but the last gives its runs metrics of their own, over a provider of its own: the
//! last installs the global meter provider, which runs without metrics report to.

use futures::future::BoxFuture;
use graphwright::model::{
    Budget, ChatModel, ModelError, ModelReply, ModelRequest, ModelSettings, ReplySink, ScriptedModel, Usage,
};
use graphwright::otel::OtelMetrics;
use graphwright::prebuilt::{MessagesState, react_agent};
use graphwright::prelude::*;
use opentelemetry::KeyValue;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

/// Looks a key up; fails for `missing`.
#[tool]
fn lookup(key: String) -> Result<String, String> {
    if key == "missing" {
        return Err(format!("no entry for {key}"));
    }
    Ok(format!("the value of {key}"))
}

/// A provider whose metrics go to an in-memory exporter.
fn provider() -> (SdkMeterProvider, InMemoryMetricExporter) {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder().with_reader(PeriodicReader::builder(exporter.clone()).build()).build();
    (provider, exporter)
}

/// One data point: its attributes, sorted, as `key=value` text.
type Attributes = Vec<String>;

/// What one data point holds: a counter's sum, or a histogram's count, sum and bucket counts.
#[derive(Debug, PartialEq)]
enum Point {
    Sum(u64),
    Histogram { count: u64, sum: f64, buckets: Vec<u64> },
}

/// Every data point the provider has exported by now, by instrument name and attributes, with
/// each instrument's unit.
fn exported(provider: &SdkMeterProvider, exporter: &InMemoryMetricExporter) -> Exported {
    provider.force_flush().unwrap();
    let batches = exporter.get_finished_metrics().unwrap();
    // Cumulative: the last export holds everything.
    let last: &ResourceMetrics = batches.last().expect("an export");
    let mut points = BTreeMap::new();
    let mut units = BTreeMap::new();
    for scope in last.scope_metrics() {
        assert_eq!(scope.scope().name(), "graphwright");
        assert_eq!(scope.scope().version(), Some(env!("CARGO_PKG_VERSION")));
        for metric in scope.metrics() {
            units.insert(metric.name().to_owned(), metric.unit().to_owned());
            let mut add = |attributes: &mut dyn Iterator<Item = &KeyValue>, point: Point| {
                let mut key: Attributes = attributes.map(|kv| format!("{}={}", kv.key, kv.value)).collect();
                key.sort();
                points.insert((metric.name().to_owned(), key), point);
            };
            match metric.data() {
                AggregatedMetrics::U64(MetricData::Sum(sum)) => {
                    for p in sum.data_points() {
                        add(&mut p.attributes(), Point::Sum(p.value()));
                    }
                }
                AggregatedMetrics::U64(MetricData::Histogram(histogram)) => {
                    for p in histogram.data_points() {
                        #[allow(clippy::cast_precision_loss)] // small token counts
                        let sum = p.sum() as f64;
                        add(
                            &mut p.attributes(),
                            Point::Histogram { count: p.count(), sum, buckets: p.bucket_counts().collect() },
                        );
                    }
                }
                AggregatedMetrics::F64(MetricData::Histogram(histogram)) => {
                    for p in histogram.data_points() {
                        let point = Point::Histogram { count: p.count(), sum: p.sum(), buckets: Vec::new() };
                        add(&mut p.attributes(), point);
                    }
                }
                other => panic!("{} is not a counter or histogram of the expected type: {other:?}", metric.name()),
            }
        }
    }
    Exported { points, units }
}

struct Exported {
    points: BTreeMap<(String, Attributes), Point>,
    units: BTreeMap<String, String>,
}

impl Exported {
    fn get(&self, name: &str, attributes: &[&str]) -> &Point {
        let mut key: Attributes = attributes.iter().map(|a| (*a).to_owned()).collect();
        key.sort();
        self.points.get(&(name.to_owned(), key)).unwrap_or_else(|| {
            let of_name: Vec<_> = self.points.keys().filter(|(n, _)| n == name).map(|(_, a)| a).collect();
            panic!("no point of {name} with {attributes:?}; there are: {of_name:#?}")
        })
    }

    fn sum(&self, name: &str, attributes: &[&str]) -> u64 {
        match self.get(name, attributes) {
            Point::Sum(value) => *value,
            other @ Point::Histogram { .. } => panic!("{name} is not a counter: {other:?}"),
        }
    }

    /// A histogram's count, and its sum (for token counts, exact).
    fn histogram(&self, name: &str, attributes: &[&str]) -> (u64, f64) {
        match self.get(name, attributes) {
            Point::Histogram { count, sum, .. } => (*count, *sum),
            other @ Point::Sum(_) => panic!("{name} is not a histogram: {other:?}"),
        }
    }

    /// How many points `name` has (one per set of attributes).
    fn series(&self, name: &str) -> usize {
        self.points.keys().filter(|(n, _)| n == name).count()
    }
}

fn reply(message: Message, usage: Usage) -> ModelReply {
    ModelReply { usage, ..ModelReply::new(message) }
}

/// A model `planner` of provider `fixed` that gives its replies in order, each with exactly the
/// usage given (a `ScriptedModel` adds an estimate of the prompt's tokens).
#[derive(Clone)]
struct Planner {
    settings: ModelSettings,
    replies: Arc<Mutex<VecDeque<Result<ModelReply, ModelError>>>>,
}

impl Planner {
    fn new(replies: impl IntoIterator<Item = Result<ModelReply, ModelError>>) -> Self {
        Self { settings: ModelSettings::default(), replies: Arc::new(Mutex::new(replies.into_iter().collect())) }
    }
}

impl ChatModel for Planner {
    fn provider(&self) -> &'static str {
        "fixed"
    }

    fn model(&self) -> &'static str {
        "planner"
    }

    fn settings(&self) -> &ModelSettings {
        &self.settings
    }

    fn settings_mut(&mut self) -> &mut ModelSettings {
        &mut self.settings
    }

    fn generate<'a>(
        &'a self,
        _request: ModelRequest<'a>,
        _sink: &'a mut dyn ReplySink,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        let next = self.replies.lock().unwrap().pop_front().expect("a reply left");
        Box::pin(std::future::ready(next))
    }
}

const CHAT: [&str; 3] = ["gen_ai.operation.name=chat", "gen_ai.provider.name=fixed", "gen_ai.request.model=planner"];

fn chat_with(extra: &str) -> Vec<&str> {
    let mut attributes = CHAT.to_vec();
    attributes.push(extra);
    attributes
}

/// A run paused before its tools, then resumed: the tools run (one call fails), the model
/// answers. Then a run whose model call fails, and a run whose reply passes its budget.
#[tokio::test]
async fn runs_model_calls_and_tool_calls_reach_the_instruments() {
    let (provider, exporter) = provider();
    let metrics = Arc::new(OtelMetrics::from_provider(&provider));
    let calls = vec![
        ToolCall::new("c1", "lookup", json!({"key": "colour"})),
        ToolCall::new("c2", "lookup", json!({"key": "missing"})),
        ToolCall::new("c3", "guess", json!({})),
    ];
    let model = Planner::new([
        Ok(reply(Message::assistant("").with_tool_calls(calls), Usage::tokens(120, 30).with_cached(20))),
        Ok(reply(Message::assistant("The colour is known; the rest is not."), Usage::tokens(200, 15))),
    ]);
    let app = react_agent(model, tools![Lookup]).name("researcher").graph().checkpointer(MemorySaver::new());
    let app = app.compile().unwrap();
    let cfg = RunConfig::thread("t1").metrics(metrics.clone());

    let paused = app
        .invoke(MessagesState::new([Message::user("what is known?")]), &cfg.clone().interrupt_before(["tools"]))
        .await;
    assert!(paused.unwrap().is_interrupted());
    let done = app.resume(&cfg, ()).await.unwrap();
    assert_eq!(done.state.last_reply(), Some("The colour is known; the rest is not."));

    let refusing = Planner::new([Err(ModelError::Config("no key for this model".into()))]);
    let broken = react_agent(refusing, tools![Lookup]).name("researcher").compile().unwrap();
    let failed = broken
        .invoke(MessagesState::new([Message::user("hello")]), &RunConfig::default().metrics(metrics.clone()))
        .await;
    assert!(failed.is_err());

    let costly = Planner::new([Ok(reply(Message::assistant("a long answer"), Usage::tokens(500, 100)))]);
    let capped = react_agent(costly, tools![Lookup]).name("capped").compile().unwrap();
    let cfg = RunConfig::default().budget(Budget::tokens(300)).metrics(metrics.clone());
    let over = capped.invoke(MessagesState::new([Message::user("tell me everything")]), &cfg).await;
    assert!(matches!(over, Err(GraphError::BudgetExceeded { .. })), "{over:?}");

    let got = exported(&provider, &exporter);
    let researcher = "graphwright.graph=researcher";
    assert_eq!(got.sum("graphwright.runs.started", &[researcher]), 3, "paused, resumed, failed");
    assert_eq!(got.sum("graphwright.runs.started", &["graphwright.graph=capped"]), 1);
    let ended = |graph: &str, status: &str| {
        let status = format!("graphwright.run.status={status}");
        got.sum("graphwright.runs.ended", &[graph, &status])
    };
    assert_eq!(ended(researcher, "interrupted"), 1);
    assert_eq!(ended(researcher, "success"), 1);
    assert_eq!(ended(researcher, "error"), 1);
    assert_eq!(ended("graphwright.graph=capped", "error"), 1);
    assert_eq!(got.series("graphwright.runs.ended"), 4, "no other status");
    let status = "graphwright.run.status=success";
    assert_eq!(got.histogram("graphwright.run.duration", &[researcher, status]).0, 1);

    // Tokens: both replies of the first runs, and the reply that passed the budget (spent all the same).
    let input = got.histogram("gen_ai.client.token.usage", &chat_with("gen_ai.token.type=input"));
    let output = got.histogram("gen_ai.client.token.usage", &chat_with("gen_ai.token.type=output"));
    assert_eq!(input, (3, 820.0));
    assert_eq!(output, (3, 145.0));
    match got.get("gen_ai.client.token.usage", &chat_with("gen_ai.token.type=input")) {
        // Bounds 1, 4, 16, 64, 256, 1024, ...: 120 and 200 in (64, 256], 500 in (256, 1024].
        Point::Histogram { buckets, .. } => assert_eq!(buckets[..7], [0, 0, 0, 0, 2, 1, 0]),
        other @ Point::Sum(_) => panic!("{other:?}"),
    }
    assert_eq!(got.series("gen_ai.client.token.usage"), 2, "input and output only");
    let duration = "gen_ai.client.operation.duration";
    assert_eq!(got.histogram(duration, &CHAT).0, 2, "the calls that succeeded");
    assert_eq!(got.histogram(duration, &chat_with("error.type=config")).0, 1);
    assert_eq!(got.histogram(duration, &chat_with("error.type=budget_exceeded")).0, 1);
    assert_eq!(got.series(duration), 3);

    let tool = |name: &str, outcome: &str| {
        let name = format!("gen_ai.tool.name={name}");
        let outcome_attr = format!("graphwright.tool.outcome={outcome}");
        let error = format!("error.type={outcome}");
        let mut attributes = vec![name.as_str(), outcome_attr.as_str()];
        if outcome != "ok" {
            attributes.push(&error);
        }
        let calls = got.sum("graphwright.tool.calls", &attributes);
        assert_eq!(got.histogram("graphwright.tool.duration", &attributes).0, calls);
        calls
    };
    assert_eq!(tool("lookup", "ok"), 1);
    assert_eq!(tool("lookup", "failed"), 1);
    assert_eq!(tool("unknown", "unknown_tool"), 1, "a made-up name is not a series of its own");
    assert_eq!(got.series("graphwright.tool.calls"), 3);

    for (name, unit) in [
        ("gen_ai.client.token.usage", "{token}"),
        ("gen_ai.client.operation.duration", "s"),
        ("graphwright.runs.started", "{run}"),
        ("graphwright.runs.ended", "{run}"),
        ("graphwright.run.duration", "s"),
        ("graphwright.tool.calls", "{call}"),
        ("graphwright.tool.duration", "s"),
    ] {
        assert_eq!(got.units[name], unit, "{name}");
    }
}

#[graph]
mod relay {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
    }

    #[node(entry, subgraph, next = END)]
    fn ask() -> StateGraph<graphwright::prebuilt::MessagesState> {
        let model = graphwright::model::ScriptedModel::new([graphwright::model::ModelReply {
            usage: graphwright::model::Usage::tokens(9, 4),
            ..graphwright::model::ModelReply::new(Message::assistant("relayed"))
        }]);
        graphwright::prebuilt::react_agent(model, ToolSet::new()).name("inner").graph()
    }
}

impl From<&relay::State> for MessagesState {
    fn from(parent: &relay::State) -> Self {
        MessagesState::new(parent.messages.clone())
    }
}

impl From<MessagesState> for relay::StateUpdate {
    fn from(child: MessagesState) -> Self {
        Self::new().messages(child.messages)
    }
}

/// A subgraph's run is part of its parent's: one run reported, the subgraph's model call in it.
#[tokio::test]
async fn a_subgraph_is_part_of_its_parents_run() {
    let (provider, exporter) = provider();
    let cfg = RunConfig::default().metrics(Arc::new(OtelMetrics::from_provider(&provider)));
    let out = relay::graph().compile().unwrap().invoke(relay::State::default(), &cfg).await.unwrap();
    assert_eq!(out.state.messages.last().map(|m| m.content.as_str()), Some("relayed"));

    let got = exported(&provider, &exporter);
    assert_eq!(got.sum("graphwright.runs.started", &["graphwright.graph=relay"]), 1);
    assert_eq!(got.series("graphwright.runs.started"), 1, "the subgraph's run is not a run of its own");
    let ended = ["graphwright.graph=relay", "graphwright.run.status=success"];
    assert_eq!(got.sum("graphwright.runs.ended", &ended), 1);
    let output = ["gen_ai.operation.name=chat", "gen_ai.provider.name=scripted", "gen_ai.request.model=scripted"];
    let output = [&output[..], &["gen_ai.token.type=output"]].concat();
    assert_eq!(got.histogram("gen_ai.client.token.usage", &output), (1, 4.0));
}

/// A run whose future is dropped ends as cancelled: every run started is ended.
#[tokio::test]
async fn a_dropped_run_ends_as_cancelled() {
    let (provider, exporter) = provider();
    let cfg = RunConfig::default().metrics(Arc::new(OtelMetrics::from_provider(&provider)));
    let app = slow::graph().compile().unwrap();
    let run = app.invoke(slow::State::default(), &cfg);
    assert!(tokio::time::timeout(std::time::Duration::from_millis(20), run).await.is_err(), "the run was cut short");

    let got = exported(&provider, &exporter);
    assert_eq!(got.sum("graphwright.runs.started", &["graphwright.graph=slow"]), 1);
    assert_eq!(got.sum("graphwright.runs.ended", &["graphwright.graph=slow", "graphwright.run.status=cancelled"]), 1);
    assert_eq!(got.series("graphwright.runs.ended"), 1);
}

#[graph]
mod slow {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        pub done: bool,
    }

    #[node(entry, next = END)]
    async fn wait(_state: &State) -> StateUpdate {
        tokio::time::sleep(std::time::Duration::from_mins(1)).await;
        StateUpdate::new().done(true)
    }
}

/// Waits as long as it is asked to.
#[tool]
async fn wait(millis: u64) -> String {
    tokio::time::sleep(std::time::Duration::from_millis(millis)).await;
    format!("waited {millis} ms")
}

/// A tool call's duration, in a run that export records (timed from its span's start, on the
/// span's clock) and in one it does not (on the runtime's clock): the time the call took either
/// way, and within the span the call's record has.
#[tokio::test]
async fn a_tool_calls_duration_is_the_time_it_took_recorded_or_not() {
    use opentelemetry_sdk::trace::InMemorySpanExporter;
    use tracing_subscriber::layer::SubscriberExt as _;

    let (provider, exporter) = provider();
    let metrics = Arc::new(OtelMetrics::from_provider(&provider));
    let call = |id: &str| ToolCall::new(id, "wait", json!({"millis": 40}));
    let app = |id: &str| {
        let model = ScriptedModel::new([
            reply(Message::assistant("").with_tool_calls(vec![call(id)]), Usage::tokens(5, 5)),
            reply(Message::assistant("done"), Usage::tokens(5, 5)),
        ]);
        react_agent(model, tools![Wait]).name("waiter").compile().unwrap()
    };
    let cfg = RunConfig::default().metrics(metrics.clone());
    let input = || MessagesState::new([Message::user("wait")]);

    let spans = InMemorySpanExporter::default();
    let telemetry = graphwright::otel::Otel::from_env().metrics(false).build_with_exporter(spans.clone()).unwrap();
    let subscriber = tracing_subscriber::registry().with(telemetry.layer());
    {
        let _guard = tracing::subscriber::set_default(subscriber);
        app("recorded").invoke(input(), &cfg).await.unwrap();
        telemetry.flush().unwrap();
    }
    let recorded = spans.get_finished_spans().unwrap();
    let tool_span = recorded.iter().find(|span| span.name == "execute_tool wait").expect("the call's span");
    let span_seconds = tool_span.end_time.duration_since(tool_span.start_time).unwrap().as_secs_f64();
    let attributes = ["gen_ai.tool.name=wait", "graphwright.tool.outcome=ok"];
    let (calls, seconds) = exported(&provider, &exporter).histogram("graphwright.tool.duration", &attributes);
    assert_eq!(calls, 1);
    assert!((0.04..=span_seconds).contains(&seconds), "{seconds} s, the span {span_seconds} s");

    app("plain").invoke(input(), &cfg).await.unwrap();
    let (calls, both) = exported(&provider, &exporter).histogram("graphwright.tool.duration", &attributes);
    assert_eq!(calls, 2);
    assert!((0.04..5.0).contains(&(both - seconds)), "{} s", both - seconds);
}

/// With no metrics of its own, a run reports to the global meter provider, the one installed
/// when it starts: also one installed after runs that reported to none.
#[tokio::test]
async fn runs_without_metrics_report_to_the_global_meter_provider() {
    let model = || ScriptedModel::new([reply(Message::assistant("hi"), Usage::tokens(7, 3))]);
    let before = react_agent(model(), tools![Lookup]).name("early").compile().unwrap();
    before.invoke(MessagesState::new([Message::user("hello")]), &RunConfig::default()).await.unwrap();

    let (provider, exporter) = provider();
    opentelemetry::global::set_meter_provider(provider.clone());
    let app = react_agent(model(), tools![Lookup]).name("greeter").compile().unwrap();
    app.invoke(MessagesState::new([Message::user("hello")]), &RunConfig::default()).await.unwrap();
    let detached = model().invoke(&[Message::user("hello")], &Runtime::detached()).await.unwrap();
    assert_eq!(detached.content, "hi");

    let got = exported(&provider, &exporter);
    assert_eq!(got.sum("graphwright.runs.started", &["graphwright.graph=greeter"]), 1);
    assert_eq!(got.series("graphwright.runs.started"), 1, "the run before the provider reported to none");
    let output = ["gen_ai.operation.name=chat", "gen_ai.provider.name=scripted", "gen_ai.request.model=scripted"];
    let output = [&output[..], &["gen_ai.token.type=output"]].concat();
    assert_eq!(got.histogram("gen_ai.client.token.usage", &output), (2, 6.0), "the run's call and the detached one");
}
