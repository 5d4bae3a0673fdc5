//! The impls every HTTP client shares, written once as macros each client invokes: its
//! [`ChatModel`](crate::model::ChatModel) (or its embeddings builders) over the `conn` field
//! the clients all keep.

/// The builders and accessors every embeddings client keeps in `conn` (an `http::Connection`)
/// shares: its retry policy, its HTTP client, its model's name.
macro_rules! embeddings_over_connection {
    ($client:ty) => {
        impl $client {
            /// How a failed request is tried again (default:
            /// [`ModelRetry::default`](crate::model::ModelRetry::default)).
            #[must_use]
            pub fn retry(mut self, retry: $crate::model::ModelRetry) -> Self {
                self.conn.settings.retry = retry;
                self
            }

            /// The HTTP client to send with (its proxy, TLS roots and pool), instead of the
            /// shared one.
            #[must_use]
            pub fn http_client(mut self, client: reqwest::Client) -> Self {
                self.conn.http = client;
                self
            }

            /// The model's name (or id).
            pub fn model(&self) -> &str {
                &self.conn.model
            }
        }
    };
}

/// The [`ChatModel`] of a client that keeps its model and settings in `conn` (an
/// `http::Connection`) and sends with `async fn send(&self, ModelRequest, &mut dyn ReplySink)`;
/// `|client| name` says how it names its provider. Also its `Debug` (the connection, never
/// the key) and its `http_client` builder.
macro_rules! chat_model_over_connection {
    ($client:ty, |$this:ident| $provider:expr) => {
        impl std::fmt::Debug for $client {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($client)).field("connection", &self.conn).finish_non_exhaustive()
            }
        }

        impl $client {
            /// The HTTP client to send with (its proxy, TLS roots and pool), instead of the
            /// shared one.
            #[must_use]
            pub fn http_client(mut self, client: reqwest::Client) -> Self {
                self.conn.http = client;
                self
            }
        }

        impl $crate::model::ChatModel for $client {
            fn provider(&self) -> &str {
                let $this = self;
                $provider
            }

            fn model(&self) -> &str {
                &self.conn.model
            }

            fn settings(&self) -> &$crate::model::ModelSettings {
                &self.conn.settings
            }

            fn settings_mut(&mut self) -> &mut $crate::model::ModelSettings {
                &mut self.conn.settings
            }

            fn generate<'a>(
                &'a self,
                request: $crate::model::ModelRequest<'a>,
                sink: &'a mut dyn $crate::model::ReplySink,
            ) -> futures::future::BoxFuture<'a, Result<$crate::model::ModelReply, $crate::model::ModelError>> {
                Box::pin(self.send(request, sink))
            }
        }
    };
}
