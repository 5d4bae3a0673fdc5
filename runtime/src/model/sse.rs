//! A streamed reply as server-sent events.

use super::ModelError;
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{Stream, StreamExt};

/// The events of a `text/event-stream` response, in order. A broken stream is a
/// [`ModelError::Stream`] whose `after_content` the caller fills in.
pub(crate) fn events(response: reqwest::Response) -> impl Stream<Item = Result<Event, String>> + Send + Unpin {
    response.bytes_stream().eventsource().map(|event| {
        event.map_err(|error| match error {
            EventStreamError::Utf8(e) => format!("the stream is not UTF-8: {e}"),
            EventStreamError::Parser(e) => format!("the stream is not server-sent events: {e}"),
            EventStreamError::Transport(e) => format!("the connection broke: {e}"),
        })
    })
}

/// The error of a stream that broke with `message`.
pub(crate) fn broken(provider: &str, after_content: bool, message: impl Into<String>) -> ModelError {
    ModelError::Stream { provider: provider.to_owned(), after_content, message: message.into() }
}
