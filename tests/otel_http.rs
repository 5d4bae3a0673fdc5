//! Export of a run's spans over OTLP/HTTP, as the crate writes them itself, to a receiver on
//! loopback that this test plays: the request it gets (path, content type, protobuf that
//! OTLP's own messages decode, the resource and scope, the span tree), and what a program is
//! told when the receiver refuses the spans or cannot be reached. Phoenix reads the same
//! requests in `otel_phoenix`.

use graphwright::otel::{Otel, OtelError, Protocol, Sampler};
use graphwright::prelude::*;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use prost::Message as _;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use tracing_subscriber::layer::SubscriberExt;

#[graph]
mod pair {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub seen: Vec<String>,
    }

    #[node(entry, next = second)]
    fn first() -> StateUpdate {
        StateUpdate::new().seen(vec!["first".to_owned()])
    }

    #[node(next = END)]
    fn second() -> StateUpdate {
        StateUpdate::new().seen(vec!["second".to_owned()])
    }
}

#[graph]
mod traced {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub seen: Vec<String>,
    }

    /// Opens a span of the program's own inside the node, and invokes another graph there.
    #[node(entry, next = END)]
    async fn work() -> Result<StateUpdate, NodeError> {
        let mut seen = tracing::info_span!("inside").in_scope(|| vec!["work".to_owned()]);
        let pair = super::pair::graph().compile()?;
        let out = pair.invoke(super::pair::State::default(), &RunConfig::default()).await?;
        seen.extend(out.state.seen);
        Ok(StateUpdate::new().seen(seen))
    }
}

/// One request as the receiver got it.
#[derive(Debug)]
struct Got {
    request_line: String,
    content_type: String,
    /// The `content-encoding` header's value; empty without one.
    content_encoding: String,
    body: Vec<u8>,
}

/// A receiver on loopback answering every request with `status`; what it got.
fn receiver(status: &'static str) -> (String, Arc<Mutex<Vec<Got>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let got = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&got);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let kept = Arc::clone(&kept);
            std::thread::spawn(move || serve(stream, status, &kept));
        }
    });
    (url, got)
}

fn serve(stream: TcpStream, status: &str, got: &Mutex<Vec<Got>>) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let (mut length, mut content_type, mut content_encoding) = (0, String::new(), String::new());
        loop {
            let mut header = String::new();
            reader.read_line(&mut header).unwrap();
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').unwrap();
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap();
            } else if name.eq_ignore_ascii_case("content-type") {
                value.trim().clone_into(&mut content_type);
            } else if name.eq_ignore_ascii_case("content-encoding") {
                value.trim().clone_into(&mut content_encoding);
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let request_line = request_line.trim_end().to_owned();
        got.lock().unwrap().push(Got { request_line, content_type, content_encoding, body });
        let answer = format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\n\r\n");
        writer.write_all(answer.as_bytes()).unwrap();
    }
}

/// Runs the graph once under export to `endpoint`; the run's output and what flushing said.
fn run_exporting(endpoint: &str) -> (pair::State, Result<(), OtelError>) {
    run_under(Otel::from_env().endpoint(endpoint).metrics(false))
}

/// Runs the graph once under export as `otel` sets it up, over HTTP.
fn run_under(otel: Otel) -> (pair::State, Result<(), OtelError>) {
    let telemetry = otel.protocol(Protocol::HttpProtobuf).service_name("otel-http-test").build().unwrap();
    let subscriber = tracing_subscriber::registry().with(telemetry.layer());
    let state = tracing::subscriber::with_default(subscriber, || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let graph = pair::graph().compile().unwrap();
            graph.invoke(pair::State::default(), &RunConfig::default()).await.unwrap().state
        })
    });
    let flushed = telemetry.flush();
    (state, flushed)
}

fn string(value: Option<&opentelemetry_proto::tonic::common::v1::AnyValue>) -> &str {
    match value.and_then(|v| v.value.as_ref()) {
        Some(Any::StringValue(s)) => s,
        other => panic!("not a string: {other:?}"),
    }
}

#[test]
fn a_runs_spans_arrive_as_one_otlp_request() {
    let (url, got) = receiver("200 OK");
    let (state, flushed) = run_exporting(&url);
    assert_eq!(state.seen, ["first", "second"]);
    flushed.unwrap();

    let got = got.lock().unwrap();
    let traces: Vec<&Got> = got.iter().filter(|g| g.request_line.contains("/v1/traces")).collect();
    assert_eq!(traces.len(), 1, "the run's spans went out together: {got:?}");
    assert!(traces[0].request_line.starts_with("POST /v1/traces "), "{}", traces[0].request_line);
    assert_eq!(traces[0].content_type, "application/x-protobuf");
    assert_eq!(traces[0].content_encoding, "", "not compressed unless asked");

    let request = ExportTraceServiceRequest::decode(traces[0].body.as_slice()).expect("OTLP protobuf");
    let resource = &request.resource_spans[0];
    let service = resource.resource.as_ref().unwrap().attributes.iter().find(|kv| kv.key == "service.name");
    assert_eq!(string(service.and_then(|kv| kv.value.as_ref())), "otel-http-test");
    let scope = &resource.scope_spans[0];
    assert_eq!(scope.scope.as_ref().unwrap().name, "graphwright");
    let names: Vec<&str> = scope.spans.iter().map(|s| s.name.as_str()).collect();
    for name in ["invoke_agent pair", "first", "second"] {
        assert_eq!(names.iter().filter(|n| **n == name).count(), 1, "one `{name}` among {names:?}");
    }
    let run = scope.spans.iter().find(|s| s.name == "invoke_agent pair").unwrap();
    let first = scope.spans.iter().find(|s| s.name == "first").unwrap();
    let step = scope.spans.iter().find(|s| s.span_id == first.parent_span_id).expect("the node's step");
    assert!(step.name.starts_with("step "), "{}", step.name);
    assert_eq!(step.parent_span_id, run.span_id, "run → step → node");
    assert!(run.parent_span_id.is_empty(), "the run has no parent");
    assert!(scope.spans.iter().all(|s| s.trace_id == run.trace_id && s.trace_id.len() == 16));
    assert!(
        run.start_time_unix_nano <= first.start_time_unix_nano && first.end_time_unix_nano <= run.end_time_unix_nano
    );
    let step = |name: &str| scope.spans.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no {name}"));
    let (one, two) = (step("step 1"), step("step 2"));
    assert_eq!(one.end_time_unix_nano, two.start_time_unix_nano, "the second step begins as the first ends");
    assert!(one.start_time_unix_nano < one.end_time_unix_nano && two.start_time_unix_nano < two.end_time_unix_nano);
}

#[test]
fn gzip_compresses_the_spans_and_the_metrics() {
    let (url, got) = receiver("200 OK");
    let (state, flushed) = run_under(Otel::from_env().endpoint(&url).gzip());
    assert_eq!(state.seen, ["first", "second"]);
    flushed.unwrap();

    let got = got.lock().unwrap();
    let paths = |path: &str| got.iter().filter(|g| g.request_line.contains(path)).collect::<Vec<_>>();
    let (traces, metrics) = (paths("/v1/traces"), paths("/v1/metrics"));
    assert_eq!(traces.len(), 1, "{got:?}");
    assert!(!metrics.is_empty(), "the metrics went out on the flush: {got:?}");
    for sent in traces.iter().chain(&metrics) {
        assert_eq!(sent.content_encoding, "gzip", "{}", sent.request_line);
        assert_eq!(sent.content_type, "application/x-protobuf");
    }
    let mut body = Vec::new();
    flate2::read::GzDecoder::new(traces[0].body.as_slice()).read_to_end(&mut body).expect("gzip");
    assert!(traces[0].body.len() < body.len(), "{} bytes sent for {}", traces[0].body.len(), body.len());
    let request = ExportTraceServiceRequest::decode(body.as_slice()).expect("OTLP protobuf once unpacked");
    let names: Vec<&str> = request.resource_spans[0].scope_spans[0].spans.iter().map(|s| s.name.as_str()).collect();
    assert!(["invoke_agent pair", "first", "second"].iter().all(|n| names.contains(n)), "{names:?}");
}

#[test]
fn what_a_node_does_is_kept_with_its_run_or_left_out_with_it() {
    const RUNS: usize = 40;
    let (url, got) = receiver("200 OK");
    let telemetry = Otel::from_env()
        .endpoint(&url)
        .protocol(Protocol::HttpProtobuf)
        .metrics(false)
        .sampler(Sampler::TraceIdRatioBased(0.5))
        .build()
        .unwrap();
    let subscriber = tracing_subscriber::registry().with(telemetry.layer());
    tracing::subscriber::with_default(subscriber, || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let graph = traced::graph().compile().unwrap();
            for _ in 0..RUNS {
                let out = graph.invoke(traced::State::default(), &RunConfig::default()).await.unwrap();
                assert_eq!(out.state.seen, ["work", "first", "second"]);
            }
        });
    });
    telemetry.flush().unwrap();

    let got = got.lock().unwrap();
    let spans: Vec<_> = got
        .iter()
        .filter(|g| g.request_line.contains("/v1/traces"))
        .flat_map(|g| ExportTraceServiceRequest::decode(g.body.as_slice()).unwrap().resource_spans)
        .flat_map(|r| r.scope_spans)
        .flat_map(|s| s.spans)
        .collect();
    let named = |name: &'static str| spans.iter().filter(move |s| s.name == name);
    let kept = named("invoke_agent traced").count();
    assert!(kept > 0 && kept < RUNS, "the sampler kept some runs and left out others: {kept} of {RUNS}");
    // A span of the program's, and a graph invoked from the node, are kept with their run and
    // only then, inside the node's span.
    for name in ["inside", "invoke_agent pair"] {
        let inside: Vec<_> = named(name).collect();
        assert_eq!(inside.len(), kept, "`{name}` spans, one a kept run");
        for span in inside {
            let parent = spans.iter().find(|s| s.span_id == span.parent_span_id).expect("its parent was exported");
            assert_eq!((parent.name.as_str(), &parent.trace_id), ("work", &span.trace_id), "`{name}`'s parent");
        }
    }
    assert_eq!(named("first").count(), kept, "the invoked graph's nodes are recorded with it");
}

#[test]
fn a_receiver_that_refuses_the_spans_is_reported_and_the_run_is_unharmed() {
    let (url, got) = receiver("503 Service Unavailable");
    let (state, flushed) = run_exporting(&url);
    assert_eq!(state.seen, ["first", "second"], "export failing does not touch the run");
    let error = flushed.expect_err("the flush says the spans did not arrive").to_string();
    assert!(error.contains("503") && error.contains("/v1/traces"), "{error}");
    assert!(!got.lock().unwrap().is_empty(), "the request was made");

    // Nothing listens on a port just freed.
    let free = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let (state, flushed) = run_exporting(&format!("http://{free}"));
    assert_eq!(state.seen, ["first", "second"]);
    let error = flushed.expect_err("an unreachable receiver is reported").to_string();
    assert!(error.contains(&free.to_string()), "{error}");
}
