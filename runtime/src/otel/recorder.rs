//! The recorder export sets up: it begins each run's trace (its parent and the sampler's
//! decision) on the run's thread, and on a thread of its own sends the runs' batches on: over
//! OTLP/HTTP as protobuf written straight from the records, or, for an exporter of the
//! program's own and for gRPC, as OpenTelemetry span data for the batch processor that exports
//! the program's other spans too.

use super::convert;
use super::encode::Request;
use super::inbox::Inbox;
use super::propagate::span_context;
use super::send::{Batching, HttpConfig, Sender as Http};
use crate::telemetry::{Batch, Begun, Parent, Recorder, calibrate, trace_id};
use opentelemetry::InstrumentationScope;
use opentelemetry::trace::{SpanKind, TraceContextExt, TraceId};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{BatchSpanProcessor, Sampler, SamplingDecision, ShouldSample, SpanProcessor};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// How long [`Exporting::flush`] waits for the recorder's thread.
const FLUSH_WAIT: Duration = Duration::from_secs(30);

/// How long the thread naps, while spans keep coming, before it looks for more on its own: the
/// runs then make no call to wake it (see `Inbox`). Short enough that the spans a busy program
/// makes meanwhile (about a thousand a millisecond, for the `ReAct` loops of BENCHMARKS.md) stay
/// well within the default queue of 2 048.
const NAP: Duration = Duration::from_millis(1);

/// Where the recorder's thread sends the runs' spans.
pub(super) enum Destination {
    /// The SDK's batch processor, as span data; it sends a span `delay` after it came at the
    /// latest (`OTEL_BSP_SCHEDULE_DELAY`).
    Processor { processor: Arc<BatchSpanProcessor>, delay: Duration },
    /// An OTLP receiver over HTTP, as protobuf written from the records: the spans of `resource`,
    /// sent as `config` and `batching` say.
    Http { config: HttpConfig, batching: Batching, resource: Resource },
}

/// Runs' spans, exported.
pub(super) struct Exporting {
    sampler: Sampler,
    inbox: Arc<Inbox>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    queue: Arc<Queue>,
    /// How long a span may wait in its run before it is due here: the destination's delay.
    hand_off_after: Duration,
}

/// The spans handed to the thread and not yet sent, against how many may wait.
#[derive(Debug)]
struct Queue {
    waiting: AtomicUsize,
    max: usize,
    /// Whether spans were dropped for a full queue (said once).
    warned: AtomicBool,
}

impl Exporting {
    /// Starts the recorder's thread, which sends spans to `destination`.
    pub(super) fn start(destination: Destination, sampler: Sampler) -> std::io::Result<Self> {
        let (max, inbox, hand_off_after) = match &destination {
            // The batch processor keeps a queue and a schedule of its own: each batch goes to it
            // at once.
            Destination::Processor { delay, .. } => (usize::MAX / 2, Inbox::new(1, 1), *delay),
            // Woken when a request's worth waits; otherwise when the oldest span is due. From a
            // nap, only when half the queue waits: well before a span would be dropped.
            Destination::Http { batching, .. } => {
                (batching.max_queue, Inbox::new(batching.max_batch, batching.max_queue / 2), batching.delay)
            }
        };
        let queue = Arc::new(Queue { waiting: AtomicUsize::new(0), max, warned: AtomicBool::new(false) });
        let inbox = Arc::new(inbox);
        let (waiting, taking) = (Arc::clone(&queue), Arc::clone(&inbox));
        let thread = std::thread::Builder::new().name("graphwright-spans".to_owned()).spawn(move || {
            // Here rather than in the first run recorded, which would wait for it.
            calibrate();
            match destination {
                Destination::Processor { processor, .. } => convert_all(&taking, &processor, &waiting),
                Destination::Http { config, batching, resource } => {
                    send_all(&taking, config, batching, Request::new(&resource), &waiting);
                }
            }
        })?;
        Ok(Self { sampler, inbox, thread: Mutex::new(Some(thread)), queue, hand_off_after })
    }

    /// Waits until every batch recorded so far is sent on (to the receiver, or to the batch
    /// processor); says why not when a request failed since the last flush.
    pub(super) fn flush(&self) -> Result<(), String> {
        let (done, wait) = channel();
        if !self.inbox.flush(done) {
            return Ok(());
        }
        wait.recv_timeout(FLUSH_WAIT)
            .unwrap_or_else(|_| Err("the span recorder's thread did not answer within 30 s".to_owned()))
    }

    /// Sends what is left and stops the thread.
    pub(super) fn stop(&self) {
        self.inbox.close();
        if let Some(thread) = self.thread.lock().unwrap_or_else(PoisonError::into_inner).take() {
            let _ = thread.join();
        }
    }
}

/// Hands every batch to `processor` as span data.
fn convert_all(inbox: &Inbox, processor: &BatchSpanProcessor, queue: &Queue) {
    let scope = InstrumentationScope::builder("graphwright").with_version(env!("CARGO_PKG_VERSION")).build();
    loop {
        // Woken by each batch; the timeout only bounds the sleep.
        let taken = inbox.take(Duration::from_mins(1));
        for batch in taken.batches {
            for span in convert::spans(&batch, &scope) {
                processor.on_end(span);
            }
            queue.waiting.fetch_sub(batch.records.len(), Ordering::Relaxed);
            batch.recycle();
        }
        for done in taken.flushes {
            let _ = done.send(Ok(()));
        }
        if taken.closed {
            return;
        }
    }
}

/// Gathers batches into requests and sends them: when a request holds `max_batch` spans, when
/// its first span has waited `delay`, when asked to flush, and when the recorder stops.
fn send_all(inbox: &Inbox, config: HttpConfig, batching: Batching, mut request: Request, queue: &Queue) {
    let http = match Http::new(config) {
        Ok(http) => Some(http),
        Err(error) => {
            tracing::warn!(%error, "the runs' spans cannot be exported");
            None
        }
    };
    // When the oldest span not yet sent is due.
    let mut due: Option<Instant> = None;
    // Why a request failed since the last flush, for the flush to say.
    let mut failed: Option<String> = None;
    let send = |request: &mut Request, failed: &mut Option<String>| {
        let spans = request.len();
        if spans == 0 {
            return;
        }
        let body = request.take();
        let sent =
            http.as_ref().map_or_else(|| Err("the OTLP HTTP client could not be made".to_owned()), |h| h.send(body));
        queue.waiting.fetch_sub(spans, Ordering::Relaxed);
        if let Err(error) = sent {
            tracing::warn!(%error, spans, "runs' spans were not exported");
            *failed = Some(error);
        }
    };
    // Whether the last wait brought spans: more are likely on their way.
    let mut flowing = false;
    loop {
        let timeout = due.map_or(batching.delay, |due| due.saturating_duration_since(Instant::now()));
        let taken = if flowing { inbox.nap(timeout.min(NAP)) } else { inbox.take(timeout) };
        flowing = !taken.batches.is_empty();
        // A due time already set is that of spans which came before these.
        if let Some(since) = taken.since {
            due.get_or_insert(since + batching.delay);
        }
        for batch in taken.batches {
            request.add(&batch);
            batch.recycle();
            if request.len() >= batching.max_batch {
                send(&mut request, &mut failed);
            }
        }
        let now_due = due.is_some_and(|due| due <= Instant::now());
        if request.len() == 0 || now_due || !taken.flushes.is_empty() || taken.closed {
            send(&mut request, &mut failed);
            due = None;
        }
        for done in taken.flushes {
            let _ = done.send(failed.take().map_or(Ok(()), Err));
        }
        if taken.closed {
            return;
        }
    }
}

impl Recorder for Exporting {
    fn begin(&self, graph: &str) -> Begun {
        let outer = tracing::Span::current();
        let outer_id = outer.id().map_or(0, |id| id.into_u64());
        // Invoked from a node of another run, no span of the program's in between: that run's
        // trace goes on from the node's span, and its sampling decision with it.
        let context = if let Some(run) = crate::telemetry::current().filter(|run| run.outer == outer_id) {
            opentelemetry::Context::current().with_remote_span_context(span_context(run))
        } else {
            let context = outer.context();
            if context.span().span_context().is_valid() { context } else { opentelemetry::Context::current() }
        };
        let parent = context.span().span_context().clone();
        let trace = if parent.is_valid() { parent.trace_id() } else { TraceId::from(trace_id()) };
        let name = format!("invoke_agent {graph}");
        let sampled = self.sampler.should_sample(Some(&context), trace, &name, &SpanKind::Internal, &[], &[]);
        let parent = parent.is_valid().then(|| Parent {
            span_id: u64::from_be_bytes(parent.span_id().to_bytes()),
            remote: parent.is_remote(),
            trace_state: sampled.trace_state.header(),
        });
        Begun {
            trace_id: u128::from_be_bytes(trace.to_bytes()),
            parent,
            outer: outer_id,
            sampled: sampled.decision == SamplingDecision::RecordAndSample,
            hand_off_after: self.hand_off_after,
        }
    }

    fn record(&self, batch: Batch) {
        let spans = batch.records.len();
        let queue = &self.queue;
        if queue.waiting.fetch_add(spans, Ordering::Relaxed) + spans > queue.max {
            queue.waiting.fetch_sub(spans, Ordering::Relaxed);
            if !queue.warned.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    max = queue.max,
                    "runs' spans dropped: more are waiting to be exported than OTEL_BSP_MAX_QUEUE_SIZE allows (the receiver is slow or unreachable)"
                );
            }
            return;
        }
        if !self.inbox.put(batch) {
            queue.waiting.fetch_sub(spans, Ordering::Relaxed);
        }
    }
}

/// The batch processor, shared by the tracer provider (the program's own spans) and the
/// recorder (the runs').
#[derive(Debug)]
pub(super) struct Shared(pub(super) Arc<BatchSpanProcessor>);

impl SpanProcessor for Shared {
    fn on_start(&self, span: &mut opentelemetry_sdk::trace::Span, cx: &opentelemetry::Context) {
        self.0.on_start(span, cx);
    }

    fn on_end(&self, span: opentelemetry_sdk::trace::SpanData) {
        self.0.on_end(span);
    }

    fn force_flush(&self) -> opentelemetry_sdk::error::OTelSdkResult {
        self.0.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> opentelemetry_sdk::error::OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }
}

/// Carried by export's layer, where a run finds the recorder (`RecorderHandle::current`).
impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for crate::telemetry::RecorderHandle {}

#[cfg(test)]
mod tests {
    use super::*;

    /// A receiver on loopback that answers `200` to every request; the length of each request's
    /// body, in the order they came (the step spans here are all of a size, so a longer request
    /// carries more of them).
    fn receiver() -> (String, Arc<Mutex<Vec<usize>>>) {
        use std::io::{BufRead as _, BufReader, Read as _, Write as _};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1/traces", listener.local_addr().unwrap());
        let got = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&got);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut writer = stream.try_clone().unwrap();
                let mut reader = BufReader::new(stream);
                let mut line = String::new();
                while reader.read_line(&mut line).unwrap_or(0) > 0 {
                    let mut length = 0;
                    loop {
                        let mut header = String::new();
                        reader.read_line(&mut header).unwrap();
                        let Some((name, value)) = header.trim_end().split_once(':') else { break };
                        if name.eq_ignore_ascii_case("content-length") {
                            length = value.trim().parse().unwrap();
                        }
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).unwrap();
                    kept.lock().unwrap().push(body.len());
                    writer.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").unwrap();
                    line.clear();
                }
            }
        });
        (url, got)
    }

    fn exporting(endpoint: String, batching: Batching) -> Exporting {
        let config = HttpConfig { endpoint, headers: Vec::new(), timeout: Duration::from_secs(5), gzip: false };
        let destination = Destination::Http { config, batching, resource: Resource::builder_empty().build() };
        Exporting::start(destination, Sampler::AlwaysOn).unwrap()
    }

    /// Waits up to 10 s for the receiver to have got `requests` requests.
    fn wait_for(got: &Mutex<Vec<usize>>, requests: usize) -> Vec<usize> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while got.lock().unwrap().len() < requests && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        got.lock().unwrap().clone()
    }

    #[test]
    fn a_full_request_goes_at_once_and_the_rest_when_due() {
        let (url, got) = receiver();
        // A delay too long to reach in the test: what is sent, is sent for being full.
        let exporting = exporting(url, Batching { max_queue: 1000, max_batch: 4, delay: Duration::from_mins(10) });
        for _ in 0..3 {
            exporting.record(Batch::of_steps(1));
        }
        std::thread::sleep(Duration::from_millis(200));
        assert!(got.lock().unwrap().is_empty(), "three spans of four: nothing sent yet");
        exporting.record(Batch::of_steps(1));
        assert_eq!(wait_for(&got, 1).len(), 1, "the fourth span fills a request, sent at once");
        exporting.record(Batch::of_steps(1));
        exporting.flush().unwrap();
        let sent = got.lock().unwrap().clone();
        assert!(sent.len() == 2 && sent[0] > sent[1], "the flush sends the fifth span alone: {sent:?}");
        exporting.stop();

        let (url, got) = receiver();
        let exporting = exporting_with_delay(url);
        let begun = exporting.begin("g");
        assert_eq!(begun.hand_off_after, Duration::from_millis(100), "a run's spans wait in the run no longer");
        let started = Instant::now();
        exporting.record(Batch::of_steps(1));
        assert_eq!(wait_for(&got, 1).len(), 1, "sent when due, without a flush");
        assert!(started.elapsed() >= Duration::from_millis(100), "not before it was due");
        exporting.stop();
    }

    fn exporting_with_delay(url: String) -> Exporting {
        exporting(url, Batching { max_queue: 1000, max_batch: 100, delay: Duration::from_millis(100) })
    }

    #[test]
    fn spans_past_the_queue_are_dropped_and_a_failed_request_is_reported() {
        // Nothing listens on a port just freed.
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let config = HttpConfig {
            endpoint: format!("http://{free}/v1/traces"),
            headers: Vec::new(),
            timeout: Duration::from_secs(5),
            gzip: false,
        };
        let batching = Batching { max_queue: 3, max_batch: 100, delay: Duration::from_mins(10) };
        let destination = Destination::Http { config, batching, resource: Resource::builder_empty().build() };
        let exporting = Exporting::start(destination, Sampler::AlwaysOn).unwrap();

        exporting.record(Batch::of_steps(2));
        exporting.record(Batch::of_steps(2));
        assert_eq!(exporting.queue.waiting.load(Ordering::Relaxed), 2, "the second batch would pass the queue's 3");
        assert!(exporting.queue.warned.load(Ordering::Relaxed), "the drop is said");

        let error = exporting.flush().expect_err("the receiver is not there");
        assert!(error.contains(&free.to_string()), "{error}");
        assert_eq!(
            exporting.queue.waiting.load(Ordering::Relaxed),
            0,
            "sent, if not received: the queue has room again"
        );
        exporting.record(Batch::of_steps(3));
        assert_eq!(exporting.queue.waiting.load(Ordering::Relaxed), 3);
        assert!(exporting.flush().is_err(), "each flush says what failed since the last");
        exporting.stop();
    }
}
