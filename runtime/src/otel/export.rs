//! Setting up OTLP export: the tracer and meter providers, made from the standard `OTEL_*`
//! variables, and the `tracing` layer that feeds the run's spans to them.

use super::parent::{EnterRecorded, LeaveRecorded};
use super::recorder::{Destination, Exporting, Shared};
use super::send::{Batching, HttpConfig};
use crate::telemetry::{Recorder, RecorderHandle};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig, WithTonicConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{BatchSpanProcessor, Sampler, SdkTracerProvider};
use std::sync::Arc;
use tracing::level_filters::LevelFilter;
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;

/// Where OTLP goes over the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Protocol {
    /// Protobuf over HTTP (`http/protobuf`, port 4318): the default, as the OTLP specification
    /// recommends.
    HttpProtobuf,
    /// gRPC (`grpc`, port 4317). Set up inside a Tokio runtime, which must outlive the export.
    Grpc,
}

impl Protocol {
    /// The protocol a variable's value names (`http/protobuf`, `grpc`).
    fn parse(value: &str) -> Result<Self, OtelError> {
        match value.trim() {
            "http/protobuf" => Ok(Self::HttpProtobuf),
            "grpc" => Ok(Self::Grpc),
            other => Err(OtelError::Protocol(other.to_owned())),
        }
    }

    /// The protocol for `signal` (`TRACES`, `METRICS`) from its variable or the shared one.
    fn from_env(signal: &str) -> Result<Option<Self>, OtelError> {
        let value =
            env(&format!("OTEL_EXPORTER_OTLP_{signal}_PROTOCOL")).or_else(|| env("OTEL_EXPORTER_OTLP_PROTOCOL"));
        value.map(|v| Self::parse(&v)).transpose()
    }
}

/// Why export could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtelError {
    /// `OTEL_EXPORTER_OTLP_PROTOCOL` (or a per-signal form) names a protocol not built in.
    #[error(
        "the OTLP protocol `{0}` is not supported: set OTEL_EXPORTER_OTLP_PROTOCOL to `http/protobuf` (the default) or `grpc`"
    )]
    Protocol(String),
    /// The exporter refused its settings (a malformed endpoint or header, say).
    #[error("could not set up the OTLP {signal} exporter: {source}; check the OTEL_EXPORTER_OTLP_* variables")]
    Exporter {
        /// `traces` or `metrics`.
        signal: &'static str,
        /// What the exporter said.
        #[source]
        source: opentelemetry_otlp::ExporterBuildError,
    },
    /// gRPC export was asked for outside a Tokio runtime.
    #[error(
        "OTLP over gRPC needs a Tokio runtime: call `init` inside one (e.g. in `#[tokio::main]`), or use `http/protobuf`"
    )]
    NoRuntime,
    /// `init` found a global `tracing` subscriber already set.
    #[error(
        "a global tracing subscriber is already set: build with `Otel::from_env().build()` and add `Telemetry::layer()` to that subscriber instead of calling `init`"
    )]
    SubscriberSet,
    /// Flushing or shutting down failed (the receiver was unreachable, say).
    #[error("OpenTelemetry export failed: {0}")]
    Export(String),
}

/// Settings for export; [`from_env`](Otel::from_env) reads the standard variables, and each
/// method here overrides one of them.
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct Otel {
    service_name: Option<String>,
    protocol: Option<Protocol>,
    endpoint: Option<String>,
    metrics: bool,
    attributes: Vec<(String, String)>,
    gzip: bool,
    sampler: Option<Sampler>,
}

/// Sets up export from the standard `OTEL_*` variables and installs a global `tracing`
/// subscriber that sends the run's spans to it (warnings also go to stderr). Keep the value
/// it returns: dropping it flushes and stops export.
///
/// # Errors
/// As [`Otel::init`].
pub fn init() -> Result<Telemetry, OtelError> {
    Otel::from_env().init()
}

impl Otel {
    /// Export as the standard variables say: traces and metrics, `http/protobuf` to
    /// `http://localhost:4318` unless set otherwise. `OTEL_SDK_DISABLED=true` turns export off,
    /// as do `OTEL_TRACES_EXPORTER=none` and `OTEL_METRICS_EXPORTER=none` for their signal.
    pub fn from_env() -> Self {
        Self { metrics: true, ..Self::default() }
    }

    /// The service name when `OTEL_SERVICE_NAME` (or `service.name` in
    /// `OTEL_RESOURCE_ATTRIBUTES`) does not give one; `graphwright` otherwise.
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = Some(name.into());
        self
    }

    /// The protocol, whatever `OTEL_EXPORTER_OTLP_PROTOCOL` says.
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = Some(protocol);
        self
    }

    /// The receiver's base URL (`http://collector:4318`, or `http://collector:4317` for gRPC),
    /// whatever `OTEL_EXPORTER_OTLP_ENDPOINT` says; over HTTP each signal goes to its path
    /// under it (`/v1/traces`, `/v1/metrics`).
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = Some(url.into());
        self
    }

    /// Adds a resource attribute (`deployment.environment.name`, or Phoenix's
    /// `openinference.project.name`), beside those of `OTEL_RESOURCE_ATTRIBUTES`.
    pub fn attribute(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.attributes.push((key.into(), value.into()));
        self
    }

    /// Compresses every request with gzip, as `OTEL_EXPORTER_OTLP_COMPRESSION=gzip` does (a
    /// receiver across a network takes a fraction of the bytes, for some CPU time of the
    /// export's thread).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), graphwright::otel::OtelError> {
    /// let telemetry = graphwright::otel::Otel::from_env().endpoint("https://collector.example:4318").gzip().build()?;
    /// # Ok(()) }
    /// ```
    pub fn gzip(mut self) -> Self {
        self.gzip = true;
        self
    }

    /// Which traces are kept, whatever `OTEL_TRACES_SAMPLER` says (`parentbased_always_on` when
    /// it says nothing): `Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(0.1)))`
    /// keeps a tenth of the runs that continue no trace, and follows a caller's decision for
    /// those that do. A run left out records nothing, and what it calls (a model, a tool, a
    /// span of the program's) is left out with it: its requests carry a `traceparent` that
    /// says so.
    ///
    /// ```no_run
    /// use graphwright::otel::{Otel, Sampler};
    /// # fn main() -> Result<(), graphwright::otel::OtelError> {
    /// let tenth = Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(0.1)));
    /// let telemetry = Otel::from_env().sampler(tenth).build()?;
    /// # Ok(()) }
    /// ```
    pub fn sampler(mut self, sampler: Sampler) -> Self {
        self.sampler = Some(sampler);
        self
    }

    /// Whether to export metrics too (on by default).
    pub fn metrics(mut self, on: bool) -> Self {
        self.metrics = on;
        self
    }

    /// Makes the providers, registers them (and W3C trace context propagation) as
    /// OpenTelemetry's global ones, and returns them; add [`Telemetry::layer`] to a `tracing`
    /// subscriber to feed them.
    ///
    /// # Errors
    /// [`OtelError::Protocol`] for an unknown protocol, [`OtelError::Exporter`] for settings the
    /// exporter refuses, [`OtelError::NoRuntime`] for gRPC outside a Tokio runtime.
    pub fn build(self) -> Result<Telemetry, OtelError> {
        let spans = if exporter_off("OTEL_TRACES_EXPORTER") {
            None
        } else {
            // Over HTTP the runs' spans are written as OTLP straight from their records; the
            // program's own go through the SDK's exporter, whose checks of the settings apply.
            let direct = match self.protocol_for("TRACES")? {
                Protocol::HttpProtobuf => {
                    let mut config = HttpConfig::resolve(self.http_endpoint("v1/traces"), env);
                    config.gzip |= self.gzip;
                    Some(config)
                }
                Protocol::Grpc => None,
            };
            Some((self.span_exporter()?, direct))
        };
        self.build_with(spans, !exporter_off("OTEL_METRICS_EXPORTER"))
    }

    /// [`build`](Self::build), with spans going to `exporter` rather than over OTLP: an
    /// exporter of the program's own, or the SDK's in-memory one in tests.
    ///
    /// # Errors
    /// As [`build`](Self::build), for the metrics' exporter.
    pub fn build_with_exporter<E>(self, exporter: E) -> Result<Telemetry, OtelError>
    where
        E: opentelemetry_sdk::trace::SpanExporter + 'static,
    {
        self.build_with(Some((exporter, None)), !exporter_off("OTEL_METRICS_EXPORTER"))
    }

    /// The providers over `spans`: the exporter of the program's spans, and where the runs' go
    /// over HTTP when not to that exporter too.
    fn build_with<E>(self, spans: Option<(E, Option<HttpConfig>)>, metrics: bool) -> Result<Telemetry, OtelError>
    where
        E: opentelemetry_sdk::trace::SpanExporter + 'static,
    {
        let resource = self.resource();
        let (tracer, recorder) = match spans {
            None => (SdkTracerProvider::builder().with_resource(resource.clone()).build(), None),
            Some((mut exporter, direct)) => {
                // The processor is shared, so the provider cannot hand it the resource: the
                // exporter has it from the start.
                exporter.set_resource(&resource);
                let processor = Arc::new(BatchSpanProcessor::builder(exporter).build());
                // As the batch processor reads them.
                let batching = Batching::resolve(env);
                let destination = match direct {
                    Some(config) => Destination::Http { config, batching, resource: resource.clone() },
                    None => Destination::Processor { processor: Arc::clone(&processor), delay: batching.delay },
                };
                let sampler = self.sampler.clone().unwrap_or_else(super::sampler::from_env);
                let recorder = Exporting::start(destination, sampler.clone())
                    .map_err(|e| OtelError::Export(format!("could not start the span recorder's thread: {e}")))?;
                let tracer = SdkTracerProvider::builder()
                    .with_resource(resource.clone())
                    .with_sampler(sampler)
                    .with_span_processor(Shared(processor))
                    .build();
                (tracer, Some(Arc::new(recorder)))
            }
        };
        let meter = if self.metrics && metrics {
            let exporter = self.metric_exporter()?;
            Some(SdkMeterProvider::builder().with_resource(resource).with_periodic_exporter(exporter).build())
        } else {
            None
        };
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        opentelemetry::global::set_tracer_provider(tracer.clone());
        if let Some(meter) = &meter {
            opentelemetry::global::set_meter_provider(meter.clone());
        }
        Ok(Telemetry { tracer, meter, recorder })
    }

    /// [`build`](Self::build), then installs a global `tracing` subscriber made of
    /// [`Telemetry::layer`] and warnings to stderr.
    ///
    /// # Errors
    /// As [`build`](Self::build); [`OtelError::SubscriberSet`] when the program already set a
    /// global subscriber (add the layer to it instead).
    pub fn init(self) -> Result<Telemetry, OtelError> {
        let telemetry = self.build()?;
        let stderr = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_filter(LevelFilter::WARN);
        let subscriber = tracing_subscriber::registry().with(telemetry.layer()).with(stderr);
        tracing::subscriber::set_global_default(subscriber).map_err(|_| OtelError::SubscriberSet)?;
        Ok(telemetry)
    }

    /// The service's resource: the variables' attributes, the name given here when they have none.
    fn resource(&self) -> Resource {
        let named_by_env = env("OTEL_SERVICE_NAME").is_some()
            || env("OTEL_RESOURCE_ATTRIBUTES")
                .is_some_and(|attrs| attrs.split(',').any(|a| a.trim().starts_with("service.name=")));
        let attributes = self.attributes.iter().map(|(k, v)| opentelemetry::KeyValue::new(k.clone(), v.clone()));
        let builder = Resource::builder().with_attributes(attributes);
        if named_by_env {
            builder.build()
        } else {
            builder.with_service_name(self.service_name.clone().unwrap_or_else(|| "graphwright".to_owned())).build()
        }
    }

    fn protocol_for(&self, signal: &str) -> Result<Protocol, OtelError> {
        Ok(match self.protocol {
            Some(protocol) => protocol,
            None => Protocol::from_env(signal)?.unwrap_or(Protocol::HttpProtobuf),
        })
    }

    /// The endpoint of `signal` over HTTP: the one given here with the signal's path, or none
    /// (the exporter then reads the variables itself).
    fn http_endpoint(&self, path: &str) -> Option<String> {
        self.endpoint.as_ref().map(|base| format!("{}/{path}", base.trim_end_matches('/')))
    }

    /// Whether gRPC goes over TLS: to an `https://` receiver, given here or by the variables.
    fn grpc_tls(&self, signal: &str) -> bool {
        let endpoint = self
            .endpoint
            .clone()
            .or_else(|| env(&format!("OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")))
            .or_else(|| env("OTEL_EXPORTER_OTLP_ENDPOINT"));
        endpoint.is_some_and(|e| e.starts_with("https://"))
    }

    fn span_exporter(&self) -> Result<opentelemetry_otlp::SpanExporter, OtelError> {
        let built = match self.protocol_for("TRACES")? {
            Protocol::HttpProtobuf => {
                self.http(opentelemetry_otlp::SpanExporter::builder().with_http(), "v1/traces").build()
            }
            Protocol::Grpc => self.grpc(opentelemetry_otlp::SpanExporter::builder().with_tonic(), "TRACES")?.build(),
        };
        built.map_err(|source| OtelError::Exporter { signal: "traces", source })
    }

    fn metric_exporter(&self) -> Result<opentelemetry_otlp::MetricExporter, OtelError> {
        let built = match self.protocol_for("METRICS")? {
            Protocol::HttpProtobuf => {
                self.http(opentelemetry_otlp::MetricExporter::builder().with_http(), "v1/metrics").build()
            }
            Protocol::Grpc => self.grpc(opentelemetry_otlp::MetricExporter::builder().with_tonic(), "METRICS")?.build(),
        };
        built.map_err(|source| OtelError::Exporter { signal: "metrics", source })
    }

    /// An exporter's HTTP builder set as this one says: protobuf, to the endpoint given here with
    /// the signal's `path` (or the variables'), gzip when asked for.
    fn http<B: WithExportConfig + WithHttpConfig>(&self, builder: B, path: &str) -> B {
        let mut builder = builder.with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
        if let Some(endpoint) = self.http_endpoint(path) {
            builder = builder.with_endpoint(endpoint);
        }
        if self.gzip {
            builder = builder.with_compression(opentelemetry_otlp::Compression::Gzip);
        }
        builder
    }

    /// An exporter's gRPC builder set as this one says for `signal` (`TRACES`, `METRICS`): the
    /// endpoint given here (or the variables'), gzip when asked for, TLS to an `https://` one.
    fn grpc<B: WithExportConfig + WithTonicConfig>(&self, builder: B, signal: &str) -> Result<B, OtelError> {
        tokio::runtime::Handle::try_current().map_err(|_| OtelError::NoRuntime)?;
        let mut builder = builder;
        if let Some(endpoint) = &self.endpoint {
            builder = builder.with_endpoint(endpoint.clone());
        }
        if self.gzip {
            builder = builder.with_compression(opentelemetry_otlp::Compression::Gzip);
        }
        if self.grpc_tls(signal) {
            builder = builder.with_tls_config(tls());
        }
        Ok(builder)
    }
}

/// TLS for gRPC with the Web PKI's roots (the same roots on every machine).
fn tls() -> opentelemetry_otlp::tonic_types::transport::ClientTlsConfig {
    opentelemetry_otlp::tonic_types::transport::ClientTlsConfig::new().with_enabled_roots()
}

/// Whether the variables turn off the exporter that `variable` names (`OTEL_TRACES_EXPORTER`,
/// `OTEL_METRICS_EXPORTER`): `none` there, or the whole SDK off (`OTEL_SDK_DISABLED=true`).
fn exporter_off(variable: &str) -> bool {
    env("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
        || env(variable).is_some_and(|v| v.eq_ignore_ascii_case("none"))
}

/// A variable's value, when set and not empty.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Export, set up: keep it for as long as the program should export. Dropping it flushes what
/// is left and stops export (a blocking wait: drop it outside async code, or on a
/// multi-threaded runtime).
#[must_use = "export stops when this is dropped"]
pub struct Telemetry {
    tracer: SdkTracerProvider,
    meter: Option<SdkMeterProvider>,
    /// Takes the runs' spans (none when traces are not exported).
    recorder: Option<Arc<Exporting>>,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry").field("metrics", &self.meter.is_some()).finish_non_exhaustive()
    }
}

impl Telemetry {
    /// The `tracing` layer of this export. Runs started under a subscriber that has it record
    /// their spans for it (cheaply, off the run's thread: the runtime's own `tracing` spans are
    /// left to other layers), and it turns the program's own spans into OpenTelemetry spans,
    /// those opened inside a node becoming children of the node's span. It takes spans at `INFO`
    /// and above, and none from the HTTP and gRPC crates the export itself uses (which would
    /// otherwise trace their own exporting). Spans go out without source locations (`code.*`) or
    /// `target`.
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: tracing::Subscriber + for<'span> LookupSpan<'span>,
    {
        let own = tracing_opentelemetry::layer()
            .with_tracer(self.tracer.tracer("graphwright"))
            .with_threads(false)
            .with_location(false)
            .with_target(false)
            .with_tracked_inactivity(false);
        let recorder = self.recorder.as_ref().map(|r| RecorderHandle(Arc::clone(r) as Arc<dyn Recorder>));
        EnterRecorded.and_then(own).and_then(LeaveRecorded).and_then(recorder).with_filter(super::filter::exported())
    }

    /// Sends every finished span (and the metrics so far) now, waiting until the receiver has
    /// them. Blocks: call it outside async code, or from a multi-threaded runtime.
    ///
    /// # Errors
    /// [`OtelError::Export`] when the receiver could not be reached.
    pub fn flush(&self) -> Result<(), OtelError> {
        if let Some(recorder) = &self.recorder {
            recorder.flush().map_err(OtelError::Export)?;
        }
        self.tracer.force_flush().map_err(|e| OtelError::Export(e.to_string()))?;
        if let Some(meter) = &self.meter {
            meter.force_flush().map_err(|e| OtelError::Export(e.to_string()))?;
        }
        Ok(())
    }

    /// Flushes and stops export.
    ///
    /// # Errors
    /// [`OtelError::Export`] when the last export failed.
    pub fn shutdown(self) -> Result<(), OtelError> {
        if let Some(recorder) = &self.recorder {
            recorder.stop();
        }
        let traced = self.tracer.shutdown().map_err(|e| OtelError::Export(e.to_string()));
        let metered = match &self.meter {
            Some(meter) => meter.shutdown().map_err(|e| OtelError::Export(e.to_string())),
            None => Ok(()),
        };
        traced.and(metered)
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        // Shut down twice (after `shutdown`) is refused by the SDK without effect.
        if let Some(recorder) = &self.recorder {
            recorder.stop();
        }
        let _ = self.tracer.shutdown();
        if let Some(meter) = &self.meter {
            let _ = meter.shutdown();
        }
    }
}
