//! OTLP over HTTP for the runs' spans encoded by [`encode`](super::encode): where the requests
//! go and with which headers, read from the `OTEL_*` variables as the SDK's exporter reads them
//! for the program's own spans, and how spans are gathered into requests (`OTEL_BSP_*`).

use opentelemetry_sdk::trace::{
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE, OTEL_BSP_MAX_EXPORT_BATCH_SIZE_DEFAULT, OTEL_BSP_MAX_QUEUE_SIZE,
    OTEL_BSP_MAX_QUEUE_SIZE_DEFAULT, OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_SCHEDULE_DELAY_DEFAULT,
};
use std::time::Duration;

/// Where the traces go when no variable and no setting says: the OTLP default.
const DEFAULT_ENDPOINT: &str = "http://localhost:4318/v1/traces";
/// How long a request may take when no variable says: the OTLP default.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where and how the trace requests are sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct HttpConfig {
    pub(super) endpoint: String,
    /// `OTEL_EXPORTER_OTLP_HEADERS`, then the traces' own, which win for the same name.
    pub(super) headers: Vec<(String, String)>,
    pub(super) timeout: Duration,
    /// Whether the requests are compressed with gzip (`OTEL_EXPORTER_OTLP_COMPRESSION`).
    pub(super) gzip: bool,
}

impl HttpConfig {
    /// The settings `var` (a variable's value, when set and not empty) gives, with `endpoint`
    /// (the traces' full URL, given in code) winning over the variables' endpoint.
    pub(super) fn resolve(endpoint: Option<String>, var: impl Fn(&str) -> Option<String>) -> Self {
        let endpoint = endpoint
            .or_else(|| var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
            .or_else(|| {
                var("OTEL_EXPORTER_OTLP_ENDPOINT").map(|base| format!("{}/v1/traces", base.trim_end_matches('/')))
            })
            .unwrap_or_else(|| DEFAULT_ENDPOINT.to_owned());
        let mut headers: Vec<(String, String)> = Vec::new();
        for name in ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"] {
            for (key, value) in var(name).as_deref().map(parse_headers).unwrap_or_default() {
                headers.retain(|(k, _)| !k.eq_ignore_ascii_case(&key));
                headers.push((key, value));
            }
        }
        let timeout = ["OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"]
            .into_iter()
            .find_map(|name| var(name).and_then(|ms| ms.trim().parse().ok()))
            .map_or(DEFAULT_TIMEOUT, Duration::from_millis);
        Self { endpoint, headers, timeout, gzip: gzip(&var) }
    }
}

/// Whether the variables ask for gzip: the traces' own, then the shared one, as the SDK's
/// exporter reads them (`none` turns it off; a value it does not know, `zstd` say, is warned
/// of and the next variable read).
fn gzip(var: impl Fn(&str) -> Option<String>) -> bool {
    for name in ["OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION"] {
        let Some(value) = var(name) else { continue };
        match value.trim().to_ascii_lowercase().as_str() {
            "gzip" => return true,
            "none" => return false,
            _ => tracing::warn!(
                variable = name,
                value = %value,
                "OTLP compression not supported: set `gzip` or `none`; this value is ignored"
            ),
        }
    }
    false
}

/// `key=value,key=value`, values percent-decoded (W3C Baggage's form, as OTLP has it); pairs
/// without a key or a value are left out.
fn parse_headers(text: &str) -> Vec<(String, String)> {
    text.split_terminator(',')
        .filter_map(|pair| pair.trim().split_once('='))
        .map(|(key, value)| {
            let value = value.trim();
            let decoded: String =
                percent_encoding::percent_decode_str(value).decode_utf8().map_or_else(|_| value.into(), Into::into);
            (key.trim().to_owned(), decoded)
        })
        .filter(|(key, value)| !key.is_empty() && !value.is_empty())
        .collect()
}

/// How spans are gathered into requests, as the SDK's batch processor reads `OTEL_BSP_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Batching {
    /// Spans waiting to be sent at most; more are dropped (and counted).
    pub(super) max_queue: usize,
    /// A request is sent once it holds this many spans...
    pub(super) max_batch: usize,
    /// ...or this long after its first span came.
    pub(super) delay: Duration,
}

impl Batching {
    /// The settings `var` gives; the SDK's defaults otherwise.
    pub(super) fn resolve(var: impl Fn(&str) -> Option<String>) -> Self {
        let number = |name: &str| var(name).and_then(|v| v.trim().parse::<usize>().ok()).filter(|&n| n > 0);
        let max_queue = number(OTEL_BSP_MAX_QUEUE_SIZE).unwrap_or(OTEL_BSP_MAX_QUEUE_SIZE_DEFAULT);
        Self {
            max_queue,
            // As the SDK has it: never more than the queue holds.
            max_batch: number(OTEL_BSP_MAX_EXPORT_BATCH_SIZE)
                .unwrap_or(OTEL_BSP_MAX_EXPORT_BATCH_SIZE_DEFAULT)
                .min(max_queue),
            delay: var(OTEL_BSP_SCHEDULE_DELAY)
                .and_then(|ms| ms.trim().parse().ok())
                .map_or(OTEL_BSP_SCHEDULE_DELAY_DEFAULT, Duration::from_millis),
        }
    }
}

/// Sends trace requests over HTTP. Made on the thread that sends (a blocking client).
#[derive(Debug)]
pub(super) struct Sender {
    client: reqwest::blocking::Client,
    config: HttpConfig,
    /// The endpoint as messages name it: without a user name or password it may carry.
    shown: String,
}

/// `endpoint` with any user name and password in it left out, to be named in a message.
fn shown(endpoint: &str) -> String {
    match reqwest::Url::parse(endpoint) {
        Ok(mut url) => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.to_string()
        }
        // Not a URL: the request fails before anything is sent, and the text may hold anything.
        Err(_) => "the configured OTLP endpoint (not a valid URL)".to_owned(),
    }
}

impl Sender {
    /// A client for `config`.
    pub(super) fn new(config: HttpConfig) -> Result<Self, String> {
        let mut headers = reqwest::header::HeaderMap::new();
        for (key, value) in &config.headers {
            let name = reqwest::header::HeaderName::from_bytes(key.as_bytes());
            let value = reqwest::header::HeaderValue::from_str(value);
            if let (Ok(name), Ok(value)) = (name, value) {
                headers.insert(name, value);
            } else {
                // As the SDK's exporter does: a header that cannot be sent is left out.
                tracing::warn!(header = %key, "an OTLP header from OTEL_EXPORTER_OTLP_*HEADERS is not a valid HTTP header; left out");
            }
        }
        let client = reqwest::blocking::Client::builder()
            .timeout(config.timeout)
            .default_headers(headers)
            .user_agent(concat!("graphwright/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("could not make the OTLP HTTP client: {e}"))?;
        let shown = shown(&config.endpoint);
        Ok(Self { client, config, shown })
    }

    /// Sends one request; says why it did not arrive.
    pub(super) fn send(&self, body: Vec<u8>) -> Result<(), String> {
        let mut request =
            self.client.post(&self.config.endpoint).header(reqwest::header::CONTENT_TYPE, "application/x-protobuf");
        request = if self.config.gzip {
            request.header(reqwest::header::CONTENT_ENCODING, "gzip").body(gzipped(&body))
        } else {
            request.body(body)
        };
        let response = request
            .send()
            // The error's own text would repeat the URL, credentials and all.
            .map_err(|e| format!("the OTLP trace request to {} failed: {}", self.shown, e.without_url()))?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let text = response.text().unwrap_or_default();
        let text: String = text.chars().take(200).collect();
        Err(format!("the OTLP receiver at {} answered {status}: {text}", self.shown))
    }
}

/// `body` compressed with gzip at its fastest level: the spans' keys and names repeat, which
/// the fastest level already shrinks several times over, and the compression runs beside the
/// runs on the export's thread.
fn gzipped(body: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(Vec::with_capacity(body.len() / 4), flate2::Compression::fast());
    // Writing into memory cannot fail.
    let _ = encoder.write_all(body);
    encoder.finish().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn the_endpoint_is_the_settings_then_the_traces_variable_then_the_shared_one() {
        let both = vars(&[
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://traces:4318/custom"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://shared:4318/"),
        ]);
        assert_eq!(
            HttpConfig::resolve(Some("http://given/v1/traces".into()), &both).endpoint,
            "http://given/v1/traces"
        );
        assert_eq!(HttpConfig::resolve(None, &both).endpoint, "http://traces:4318/custom", "taken as it is");
        let shared = vars(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://shared:4318/")]);
        assert_eq!(HttpConfig::resolve(None, shared).endpoint, "http://shared:4318/v1/traces");
        assert_eq!(HttpConfig::resolve(None, vars(&[])).endpoint, DEFAULT_ENDPOINT);
    }

    #[test]
    fn headers_are_decoded_and_the_traces_own_win() {
        let config = HttpConfig::resolve(
            None,
            vars(&[
                ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=shared, x-tenant = a%20b ,broken, =nokey,empty="),
                ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "Api-Key=traces"),
            ]),
        );
        let headers: Vec<(&str, &str)> = config.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(headers, [("x-tenant", "a b"), ("Api-Key", "traces")]);
    }

    #[test]
    fn the_timeout_is_in_milliseconds() {
        let given = vars(&[("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"), ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "700")]);
        assert_eq!(HttpConfig::resolve(None, given).timeout, Duration::from_millis(700));
        let shared = vars(&[("OTEL_EXPORTER_OTLP_TIMEOUT", "2500")]);
        assert_eq!(HttpConfig::resolve(None, shared).timeout, Duration::from_millis(2500));
        let bad = vars(&[("OTEL_EXPORTER_OTLP_TIMEOUT", "soon")]);
        assert_eq!(HttpConfig::resolve(None, bad).timeout, DEFAULT_TIMEOUT);
    }

    #[test]
    fn messages_name_the_endpoint_without_its_credentials() {
        assert_eq!(shown("http://ada:s3cret@collector:4318/v1/traces"), "http://collector:4318/v1/traces");
        assert_eq!(shown("http://collector:4318/v1/traces"), "http://collector:4318/v1/traces");
        assert!(!shown("not a url with s3cret").contains("s3cret"));
        let sender = Sender::new(HttpConfig {
            endpoint: "http://ada:s3cret@127.0.0.1:9/v1/traces".to_owned(),
            headers: Vec::new(),
            timeout: Duration::from_secs(5),
            gzip: false,
        })
        .unwrap();
        let error = sender.send(Vec::new()).unwrap_err();
        assert!(error.contains("127.0.0.1:9") && !error.contains("s3cret"), "{error}");
    }

    #[test]
    fn compression_is_the_traces_variable_then_the_shared_one() {
        let gzip = |pairs: &[(&str, &str)]| HttpConfig::resolve(None, vars(pairs)).gzip;
        assert!(!gzip(&[]), "none unless asked");
        assert!(gzip(&[("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")]));
        assert!(gzip(&[("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", " GZIP ")]));
        assert!(!gzip(&[
            ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "none"),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
        ]));
        assert!(
            gzip(&[("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "zstd"), ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")]),
            "a value not supported is passed over for the next variable"
        );
        assert!(!gzip(&[("OTEL_EXPORTER_OTLP_COMPRESSION", "brotli")]));
    }

    #[test]
    fn a_gzipped_body_comes_back_whole() {
        use std::io::Read as _;
        let body: Vec<u8> = (0..10_000_u32).flat_map(|i| (i % 300).to_le_bytes()).collect();
        let packed = gzipped(&body);
        assert!(packed.len() < body.len() / 4, "{} bytes of {}", packed.len(), body.len());
        let mut unpacked = Vec::new();
        flate2::read::GzDecoder::new(packed.as_slice()).read_to_end(&mut unpacked).unwrap();
        assert_eq!(unpacked, body);
    }

    #[test]
    fn batching_reads_the_batch_processors_variables() {
        let defaults = Batching::resolve(vars(&[]));
        assert_eq!(defaults, Batching { max_queue: 2048, max_batch: 512, delay: Duration::from_secs(5) });
        let given = Batching::resolve(vars(&[
            ("OTEL_BSP_MAX_QUEUE_SIZE", "100"),
            ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "400"),
            ("OTEL_BSP_SCHEDULE_DELAY", "250"),
        ]));
        assert_eq!(given, Batching { max_queue: 100, max_batch: 100, delay: Duration::from_millis(250) });
    }
}
