//! Errors: what a request gets back (`{"detail": ..}` with the status LangGraph's clients map to
//! their exception types), and what setting up a server can fail with.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// Why a request failed. Each variant maps to the status code LangGraph's clients turn into
/// their typed exceptions (400 `BadRequestError`, 403 `PermissionDeniedError`, 404
/// `NotFoundError`, 409 `ConflictError`, 422 `UnprocessableEntityError`, 5xx
/// `InternalServerError`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// The request cannot be carried out as asked (400).
    #[error("{0}")]
    BadRequest(String),
    /// The thread, run, assistant or item does not exist (404).
    #[error("{0}")]
    NotFound(String),
    /// The request clashes with the current state: an id already taken, a thread already
    /// running a task (409).
    #[error("{0}")]
    Conflict(String),
    /// The body or a parameter does not have the expected shape or values (422).
    #[error("{0}")]
    Invalid(String),
    /// The caller may not do this: the server's authorization policy refused it (403).
    #[error("{0}")]
    Forbidden(String),
    /// The body is larger than the server accepts (413).
    #[error("{0}")]
    TooLarge(String),
    /// The server's own storage failed (500); the request had no effect.
    #[error("the server's storage failed: {0}")]
    Storage(String),
    /// A graph operation failed (500).
    #[error("{0}")]
    Graph(String),
    /// The server process is shutting down and takes no new runs (503).
    #[error("{0}")]
    Unavailable(String),
    /// The caller has as many runs in flight as the server accepts per user (429, with
    /// `Retry-After`).
    #[error("{reason}")]
    TooMany {
        /// Whose limit, and what to do.
        reason: String,
        /// When to try again, in seconds.
        retry_after_secs: u64,
    },
}

impl ApiError {
    /// The HTTP status this error is answered with.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Storage(_) | Self::Graph(_) => StatusCode::INTERNAL_SERVER_ERROR,
            Self::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::TooMany { .. } => StatusCode::TOO_MANY_REQUESTS,
        }
    }

    /// The same error, its message prefixed with where it happened (`run 2 of the batch: ..`).
    #[must_use]
    pub(crate) fn within(self, place: &str) -> Self {
        let prefix = |message: String| format!("{place}: {message}");
        match self {
            Self::BadRequest(m) => Self::BadRequest(prefix(m)),
            Self::NotFound(m) => Self::NotFound(prefix(m)),
            Self::Conflict(m) => Self::Conflict(prefix(m)),
            Self::Forbidden(m) => Self::Forbidden(prefix(m)),
            Self::Invalid(m) => Self::Invalid(prefix(m)),
            Self::TooLarge(m) => Self::TooLarge(prefix(m)),
            Self::Storage(m) => Self::Storage(prefix(m)),
            Self::Graph(m) => Self::Graph(prefix(m)),
            Self::Unavailable(m) => Self::Unavailable(prefix(m)),
            Self::TooMany { reason, retry_after_secs } => Self::TooMany { reason: prefix(reason), retry_after_secs },
        }
    }

    pub(crate) fn thread_not_found(thread: &str) -> Self {
        Self::NotFound(format!(
            "Thread {thread} not found: create it first (POST /threads) or pass if_not_exists=\"create\""
        ))
    }

    pub(crate) fn run_not_found(run: &str) -> Self {
        Self::NotFound(format!("Run {run} not found"))
    }
}

impl From<rusqlite::Error> for ApiError {
    fn from(error: rusqlite::Error) -> Self {
        Self::Storage(error.to_string())
    }
}

impl From<graphwright::StoreError> for ApiError {
    /// A namespace, key or query the store cannot take is the client's mistake (an empty
    /// namespace a 400, as LangGraph answers it, the rest a 422); the store failing is the
    /// server's.
    fn from(error: graphwright::StoreError) -> Self {
        use graphwright::StoreError;
        match &error {
            StoreError::InvalidNamespace { namespace, .. } if namespace.is_empty() => {
                Self::BadRequest(error.to_string())
            }
            StoreError::InvalidNamespace { .. }
            | StoreError::InvalidKey { .. }
            | StoreError::InvalidQuery { .. }
            | StoreError::NoIndex { .. }
            | StoreError::InvalidIndex { .. } => Self::Invalid(error.to_string()),
            _ => Self::Storage(error.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::error!(error = %self, "request failed");
        }
        let retry_after = match &self {
            Self::TooMany { retry_after_secs, .. } => Some(retry_after_secs.to_string()),
            _ => None,
        };
        let mut response = (status, Json(serde_json::json!({ "detail": self.to_string() }))).into_response();
        if let Some(value) = retry_after.and_then(|v| axum::http::HeaderValue::from_str(&v).ok()) {
            response.headers_mut().insert(axum::http::header::RETRY_AFTER, value);
        }
        response
    }
}

/// Why a server could not be set up or could not keep serving.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The database file could not be opened or prepared.
    #[error("could not open the server's database {path}: {reason}")]
    Database {
        /// The file.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// A [`Cors`](crate::Cors) setting is not an origin, a method or a header name.
    #[error(transparent)]
    Cors(#[from] crate::cors::CorsError),
    /// The server was to listen on an address other machines reach, with no authenticator.
    #[error(
        "refusing to serve {addr} without authentication: anyone who reaches it could read every thread and start \
         runs; add an authenticator with Server::auth(ApiKeys::new().key(..)) or Server::auth(Jwt::..), bind a \
         loopback address (127.0.0.1), or opt in to an open server with Server::allow_unauthenticated()"
    )]
    Unauthenticated {
        /// The address.
        addr: String,
    },
    /// [`Cors::any`](crate::Cors::any) was given to a server with authentication.
    #[error(
        "Cors::any() lets every website call an authenticated server from its users' browsers: list the origins \
         of your front ends with Cors::loopback().allow_origin(\"https://..\") instead"
    )]
    AnyOriginWithAuth,
    /// [`Server::authorize`](crate::Server::authorize) was given without
    /// [`Server::auth`](crate::Server::auth): a policy needs to know who is calling.
    #[error(
        "an authorization policy needs callers to authenticate: add Server::auth(ApiKeys::new().key(..)) or \
         Server::auth(Jwt::..) beside Server::authorize(..)"
    )]
    AuthorizationWithoutAuthentication,
    /// The process lost the PostgreSQL connection that shows it is alive: the other processes
    /// take its runs over, so it stopped serving rather than run them a second time beside
    /// them. Return it from `main`: the process must end (as if killed) and be started again.
    #[error(
        "this server process lost the PostgreSQL connection that shows it is alive, so the other processes are \
         taking its runs over: it stopped serving so that no run executes twice; let the process end and start it \
         again"
    )]
    LeaseLost,
    /// [`Server::store_index`](crate::Server::store_index) was given with
    /// [`Server::encryption`](crate::Server::encryption): the vectors an index keeps would
    /// reveal what the encryption hides.
    #[error(
        "a store index cannot be used with encryption at rest: the vectors it keeps would reveal the meaning of the \
         encrypted memories (a text can be largely recovered from its embedding); drop one of Server::store_index \
         and Server::encryption"
    )]
    IndexWithEncryption,
    /// Two graphs were given the same name.
    #[error("two graphs are named `{0}`: give each graph its own name")]
    DuplicateGraph(String),
    /// The address could not be bound or the connection loop failed.
    #[error("serving on {addr} failed: {source}")]
    Io {
        /// The address.
        addr: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}
