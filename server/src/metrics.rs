//! What `/metrics` reports: runs started and ended per graph, how long they took, their model
//! calls (tokens per provider and model, outcomes, durations) and tool calls (per tool and
//! outcome), the run queue, open streams, and the HTTP requests served, counted by this process.
//!
//! Counters live in a Prometheus registry (the Prometheus project's `prometheus-client`); the
//! queue is read from the server's records when scraped, so with PostgreSQL it is the whole
//! cluster's. Model and tool calls reach it through [`GraphMetrics`], the
//! [`RunMetrics`](graphwright::metrics::RunMetrics) each run is given. `GET /metrics` answers
//! Prometheus's text format; `?format=json` answers the JSON LangGraph's server gives
//! (`queue`), with this process's run counters beside it.

use crate::meta::OpenRun;
use graphwright::metrics::{ModelCallEnded, RunEnded, RunMetrics, RunStarted, ToolCallEnded};
use graphwright::model::Usage;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GraphLabels {
    graph: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EndLabels {
    graph: String,
    status: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModelLabels {
    graph: String,
    provider: String,
    model: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModelCallLabels {
    graph: String,
    provider: String,
    model: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TokenLabels {
    graph: String,
    provider: String,
    model: String,
    /// `input`, `output`, or `cached` (the part of `input` the provider served from its cache).
    r#type: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    graph: String,
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolCallLabels {
    graph: String,
    tool: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: String,
    route: String,
}

/// How a run can end, as `graphwright_runs_ended_total` labels it.
pub(crate) const RUN_ENDS: [&str; 4] = ["success", "error", "interrupted", "rolled_back"];

/// The queue as LangGraph's `/metrics?format=json` reports it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct QueueStats {
    pub(crate) pending: usize,
    pub(crate) running: usize,
    /// The longest and the median wait of the pending runs, in seconds.
    pub(crate) wait_max: Option<f64>,
    pub(crate) wait_median: Option<f64>,
    /// The longest wait of a pending run that no other run on its thread holds up.
    pub(crate) unblocked_wait_max: Option<f64>,
}

impl QueueStats {
    /// The figures of `open` (oldest first) at `now`.
    pub(crate) fn of(open: &[OpenRun], now: SystemTime) -> Self {
        let mut waits = Vec::new();
        let mut unblocked_wait_max: Option<f64> = None;
        let mut seen_threads = HashSet::new();
        let mut stats = Self::default();
        for run in open {
            // Oldest first: the first open run of a thread is the one its thread lets go next.
            let first_of_thread = seen_threads.insert(run.thread_id.as_str());
            if run.running {
                stats.running += 1;
                continue;
            }
            stats.pending += 1;
            let wait = humantime::parse_rfc3339(&run.created_at)
                .ok()
                .and_then(|created| now.duration_since(created).ok())
                .unwrap_or(Duration::ZERO)
                .as_secs_f64();
            waits.push(wait);
            if first_of_thread {
                unblocked_wait_max = Some(unblocked_wait_max.map_or(wait, |max| max.max(wait)));
            }
        }
        waits.sort_by(f64::total_cmp);
        stats.wait_max = waits.last().copied();
        stats.wait_median = (!waits.is_empty()).then(|| waits[waits.len() / 2]);
        stats.unblocked_wait_max = unblocked_wait_max;
        stats
    }

    fn to_json(&self) -> Value {
        json!({
            "n_pending": self.pending,
            "n_running": self.running,
            "pending_runs_wait_time_max_secs": self.wait_max,
            "pending_runs_wait_time_med_secs": self.wait_median,
            "pending_unblocked_runs_wait_time_max_secs": self.unblocked_wait_max,
        })
    }
}

/// The server's instruments.
pub(crate) struct Metrics {
    registry: Registry,
    runs_started: Family<GraphLabels, Counter>,
    runs_resumed: Family<GraphLabels, Counter>,
    runs_ended: Family<EndLabels, Counter>,
    run_seconds: Family<GraphLabels, Histogram>,
    model_calls: Family<ModelCallLabels, Counter>,
    model_tokens: Family<TokenLabels, Counter>,
    model_call_seconds: Family<ModelLabels, Histogram>,
    tool_calls: Family<ToolCallLabels, Counter>,
    tool_call_seconds: Family<ToolLabels, Histogram>,
    streams_open: Gauge,
    requests: Family<RequestLabels, Counter>,
    request_seconds: Family<RouteLabels, Histogram>,
    queue_pending: Gauge,
    queue_running: Gauge,
}

fn seconds_histogram() -> Histogram {
    // 1 ms to about 4.6 hours, doubling.
    Histogram::new(exponential_buckets(0.001, 2.0, 24))
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("graphwright");
        let runs_started = Family::default();
        let runs_ended = Family::default();
        let runs_resumed = Family::default();
        let run_seconds = Family::new_with_constructor(seconds_histogram as fn() -> Histogram);
        let model_calls = Family::default();
        let model_tokens = Family::default();
        let model_call_seconds = Family::new_with_constructor(seconds_histogram as fn() -> Histogram);
        let tool_calls = Family::default();
        let tool_call_seconds = Family::new_with_constructor(seconds_histogram as fn() -> Histogram);
        let streams_open = Gauge::default();
        let requests = Family::default();
        let request_seconds = Family::new_with_constructor(seconds_histogram as fn() -> Histogram);
        let queue_pending = Gauge::default();
        let queue_running = Gauge::default();
        registry.register("runs_started", "Runs this process started executing, per graph", runs_started.clone());
        registry.register(
            "runs_resumed",
            "Runs an earlier server process accepted and did not finish, taken up again by this one, per graph",
            runs_resumed.clone(),
        );
        registry.register(
            "runs_ended",
            "Runs this process executed that ended, per graph and status (success, error, interrupted, rolled_back)",
            runs_ended.clone(),
        );
        registry.register("run_duration_seconds", "How long runs took to execute, per graph", run_seconds.clone());
        registry.register(
            "model_calls",
            "Model calls runs made, per graph, provider, model and outcome (ok, or how the call failed)",
            model_calls.clone(),
        );
        registry.register(
            "model_tokens",
            "Tokens model calls used, per graph, provider, model and type (input, output, and cached: the part of input served from the provider's cache)",
            model_tokens.clone(),
        );
        registry.register(
            "model_call_duration_seconds",
            "How long model calls took, retries included, per graph, provider and model",
            model_call_seconds.clone(),
        );
        registry.register(
            "tool_calls",
            "Tool calls runs made, per graph, tool and outcome (ok, or how the call failed); calls to a tool that does not exist count under tool \"unknown\"",
            tool_calls.clone(),
        );
        registry.register(
            "tool_call_duration_seconds",
            "How long tool calls took, retries included, per graph and tool",
            tool_call_seconds.clone(),
        );
        registry.register("streams_open", "Run streams this process is sending", streams_open.clone());
        registry.register(
            "http_requests",
            "HTTP requests this process answered, per method, route and status",
            requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "How long HTTP requests took to answer (a stream: until its headers), per method and route",
            request_seconds.clone(),
        );
        registry.register("queue_pending_runs", "Runs waiting to start, in every process", queue_pending.clone());
        registry.register("queue_running_runs", "Runs executing, in every process", queue_running.clone());
        Self {
            registry,
            runs_started,
            runs_resumed,
            runs_ended,
            run_seconds,
            model_calls,
            model_tokens,
            model_call_seconds,
            tool_calls,
            tool_call_seconds,
            streams_open,
            requests,
            request_seconds,
            queue_pending,
            queue_running,
        }
    }
}

impl Metrics {
    /// A run of `graph` started executing.
    pub(crate) fn run_started(&self, graph: &str) {
        self.runs_started.get_or_create(&GraphLabels { graph: graph.to_owned() }).inc();
    }

    /// A run of `graph` that an earlier process left unfinished is taken up again.
    pub(crate) fn run_resumed(&self, graph: &str) {
        self.runs_resumed.get_or_create(&GraphLabels { graph: graph.to_owned() }).inc();
    }

    /// A run of `graph` ended with `status` after `took`.
    pub(crate) fn run_ended(&self, graph: &str, status: &'static str, took: Duration) {
        self.runs_ended.get_or_create(&EndLabels { graph: graph.to_owned(), status }).inc();
        self.run_seconds.get_or_create(&GraphLabels { graph: graph.to_owned() }).observe(took.as_secs_f64());
    }

    /// A model call of a run of `graph` ended after `duration`, having used `usage` when a
    /// reply came.
    pub(crate) fn model_call(&self, graph: &str, call: ModelCall<'_>, usage: Option<Usage>, duration: Duration) {
        let (graph, provider, model) = (graph.to_owned(), call.provider.to_owned(), call.model.to_owned());
        let labels = ModelLabels { graph, provider, model };
        self.model_call_seconds.get_or_create(&labels).observe(duration.as_secs_f64());
        let ModelLabels { graph, provider, model } = labels;
        if let Some(usage) = usage {
            for (r#type, tokens) in
                [("input", usage.input_tokens), ("output", usage.output_tokens), ("cached", usage.cached_tokens)]
            {
                let labels =
                    TokenLabels { graph: graph.clone(), provider: provider.clone(), model: model.clone(), r#type };
                self.model_tokens.get_or_create(&labels).inc_by(tokens);
            }
        }
        self.model_calls.get_or_create(&ModelCallLabels { graph, provider, model, outcome: call.outcome }).inc();
    }

    /// A call of `tool` by a run of `graph` ended with `outcome` after `duration`.
    pub(crate) fn tool_call(&self, graph: &str, tool: &str, outcome: &'static str, duration: Duration) {
        let labels = ToolLabels { graph: graph.to_owned(), tool: tool.to_owned() };
        self.tool_call_seconds.get_or_create(&labels).observe(duration.as_secs_f64());
        let ToolLabels { graph, tool } = labels;
        self.tool_calls.get_or_create(&ToolCallLabels { graph, tool, outcome }).inc();
    }

    /// Counts a stream as open until the returned guard is dropped.
    pub(crate) fn stream_opened(self: &Arc<Self>) -> OpenStream {
        self.streams_open.inc();
        OpenStream(Arc::clone(self))
    }

    /// An answered request; `route` is the route's pattern (`/threads/{id}`), not the path.
    pub(crate) fn request(&self, method: &str, route: &str, status: u16, took: Duration) {
        let (method, route) = (method.to_owned(), route.to_owned());
        self.request_seconds
            .get_or_create(&RouteLabels { method: method.clone(), route: route.clone() })
            .observe(took.as_secs_f64());
        self.requests.get_or_create(&RequestLabels { method, route, status }).inc();
    }

    /// The registry in Prometheus's text format, the queue's figures set first.
    pub(crate) fn prometheus(&self, queue: &QueueStats) -> String {
        self.queue_pending.set(i64::try_from(queue.pending).unwrap_or(i64::MAX));
        self.queue_running.set(i64::try_from(queue.running).unwrap_or(i64::MAX));
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut text, &self.registry);
        text
    }

    /// LangGraph's JSON figures (`queue`), and this process's run counters for `graphs`.
    pub(crate) fn json<'a>(&self, queue: &QueueStats, graphs: impl Iterator<Item = &'a str>) -> Value {
        let mut runs = serde_json::Map::new();
        for graph in graphs {
            let mut counts = serde_json::Map::new();
            let started = self.runs_started.get(&GraphLabels { graph: graph.to_owned() }).map_or(0, |c| c.get());
            counts.insert("started".into(), started.into());
            let resumed = self.runs_resumed.get(&GraphLabels { graph: graph.to_owned() }).map_or(0, |c| c.get());
            counts.insert("resumed".into(), resumed.into());
            for status in RUN_ENDS {
                let ended = self.runs_ended.get(&EndLabels { graph: graph.to_owned(), status }).map_or(0, |c| c.get());
                counts.insert(status.into(), ended.into());
            }
            runs.insert(graph.to_owned(), Value::Object(counts));
        }
        json!({
            "queue": queue.to_json(),
            "runs": runs,
            "streams_open": self.streams_open.get(),
        })
    }

    /// The route pattern used for requests no route matched.
    pub(crate) const UNMATCHED: &str = "unmatched";
}

/// Which model a call went to, and how it ended (`ok`, or how it failed).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ModelCall<'a> {
    pub(crate) provider: &'a str,
    pub(crate) model: &'a str,
    pub(crate) outcome: &'static str,
}

/// What a run of one graph reports its model and tool calls to: the server's registry, under
/// the graph's name. The run's start and end are counted by the server itself, which also
/// sees runs the graph never ran (cancelled before their turn, rolled back).
/// With the `otel` feature the same events also go to OpenTelemetry's instruments, as a run
/// given no metrics of its own reports them.
pub(crate) struct GraphMetrics {
    metrics: Arc<Metrics>,
    graph: String,
    otel: Option<Arc<dyn RunMetrics>>,
}

impl GraphMetrics {
    pub(crate) fn new(metrics: Arc<Metrics>, graph: &str) -> Self {
        #[cfg(feature = "otel")]
        let otel = Some(graphwright::otel::global_metrics());
        #[cfg(not(feature = "otel"))]
        let otel = None;
        Self { metrics, graph: graph.to_owned(), otel }
    }
}

impl std::fmt::Debug for GraphMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphMetrics").field("graph", &self.graph).finish_non_exhaustive()
    }
}

impl RunMetrics for GraphMetrics {
    fn run_started(&self, run: &RunStarted<'_>) {
        if let Some(otel) = &self.otel {
            otel.run_started(run);
        }
    }

    fn run_ended(&self, run: &RunEnded<'_>) {
        if let Some(otel) = &self.otel {
            otel.run_ended(run);
        }
    }

    fn model_call_ended(&self, call: &ModelCallEnded<'_>) {
        let model = ModelCall { provider: call.provider, model: call.model, outcome: call.outcome() };
        self.metrics.model_call(&self.graph, model, call.usage, call.duration);
        if let Some(otel) = &self.otel {
            otel.model_call_ended(call);
        }
    }

    fn tool_call_ended(&self, call: &ToolCallEnded<'_>) {
        self.metrics.tool_call(&self.graph, call.tool_label(), call.outcome(), call.duration);
        if let Some(otel) = &self.otel {
            otel.tool_call_ended(call);
        }
    }
}

/// An open stream, counted until dropped.
pub(crate) struct OpenStream(Arc<Metrics>);

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.streams_open.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(thread: &str, running: bool, created: SystemTime) -> OpenRun {
        OpenRun { thread_id: thread.into(), running, created_at: humantime::format_rfc3339_micros(created).to_string() }
    }

    #[test]
    fn the_queue_counts_waits_and_tells_runs_held_up_by_their_thread() {
        let now = SystemTime::now();
        let ago = |s| now - Duration::from_secs(s);
        let queue = [
            open("a", true, ago(50)),
            open("a", false, ago(40)), // behind a's running run
            open("b", false, ago(30)), // first of b: only waits for a worker
            open("c", false, ago(10)),
        ];
        let stats = QueueStats::of(&queue, now);
        assert_eq!((stats.pending, stats.running), (3, 1));
        let near = |got: Option<f64>, want: f64| got.is_some_and(|g| (g - want).abs() < 0.5);
        assert!(near(stats.wait_max, 40.0), "{stats:?}");
        assert!(near(stats.wait_median, 30.0), "{stats:?}");
        assert!(near(stats.unblocked_wait_max, 30.0), "{stats:?}");
        assert_eq!(QueueStats::of(&[], now), QueueStats::default());
    }

    #[test]
    fn counters_reach_both_formats() {
        let metrics = Arc::new(Metrics::default());
        metrics.run_started("chat");
        metrics.run_resumed("chat");
        metrics.run_ended("chat", "success", Duration::from_millis(20));
        metrics.request("POST", "/runs/wait", 200, Duration::from_millis(21));
        let ok = ModelCall { provider: "openai", model: "gpt-x", outcome: "ok" };
        let usage = Usage::tokens(100, 20).with_cached(60);
        metrics.model_call("chat", ok, Some(usage), Duration::from_millis(300));
        metrics.model_call("chat", ok, Some(usage), Duration::from_millis(300));
        metrics.model_call("chat", ModelCall { outcome: "rate_limited", ..ok }, None, Duration::from_secs(2));
        metrics.tool_call("chat", "search", "ok", Duration::from_millis(5));
        metrics.tool_call("chat", "search", "timeout", Duration::from_secs(10));
        let stream = metrics.stream_opened();
        let queue = QueueStats { pending: 2, running: 1, ..QueueStats::default() };
        let text = metrics.prometheus(&queue);
        for line in [
            "graphwright_runs_started_total{graph=\"chat\"} 1",
            "graphwright_runs_resumed_total{graph=\"chat\"} 1",
            "graphwright_runs_ended_total{graph=\"chat\",status=\"success\"} 1",
            "graphwright_run_duration_seconds_count{graph=\"chat\"} 1",
            "graphwright_streams_open 1",
            "graphwright_http_requests_total{method=\"POST\",route=\"/runs/wait\",status=\"200\"} 1",
            "graphwright_queue_pending_runs 2",
            "graphwright_queue_running_runs 1",
            "graphwright_model_calls_total{graph=\"chat\",provider=\"openai\",model=\"gpt-x\",outcome=\"ok\"} 2",
            "graphwright_model_calls_total{graph=\"chat\",provider=\"openai\",model=\"gpt-x\",outcome=\"rate_limited\"} 1",
            "graphwright_model_tokens_total{graph=\"chat\",provider=\"openai\",model=\"gpt-x\",type=\"input\"} 200",
            "graphwright_model_tokens_total{graph=\"chat\",provider=\"openai\",model=\"gpt-x\",type=\"output\"} 40",
            "graphwright_model_tokens_total{graph=\"chat\",provider=\"openai\",model=\"gpt-x\",type=\"cached\"} 120",
            "graphwright_model_call_duration_seconds_count{graph=\"chat\",provider=\"openai\",model=\"gpt-x\"} 3",
            "graphwright_tool_calls_total{graph=\"chat\",tool=\"search\",outcome=\"ok\"} 1",
            "graphwright_tool_calls_total{graph=\"chat\",tool=\"search\",outcome=\"timeout\"} 1",
            "graphwright_tool_call_duration_seconds_count{graph=\"chat\",tool=\"search\"} 2",
        ] {
            assert!(text.contains(line), "{line} is missing from:\n{text}");
        }
        drop(stream);
        let json = metrics.json(&queue, ["chat", "other"].into_iter());
        assert_eq!(json["queue"]["n_pending"], 2);
        let counts = |started, resumed, success| json!({"started": started, "resumed": resumed, "success": success, "error": 0, "interrupted": 0, "rolled_back": 0});
        assert_eq!(json["runs"]["chat"], counts(1, 1, 1));
        assert_eq!(json["runs"]["other"], counts(0, 0, 0));
        assert_eq!(json["streams_open"], 0);
    }
}
