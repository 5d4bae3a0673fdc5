//! `GET /threads/{id}/stream`: every run of a thread as one stream that stays open, one run
//! after another as they run, wherever they execute.
//!
//! Query `stream_mode` (or `stream_modes`, as LangGraph's server reads it; repeated, separated
//! by commas, or a JSON list): `run_modes` (the default: each run's own events, as its stream
//! modes make them, then a `metadata` event `{"status": "run_done", "run_id"}`), `lifecycle`
//! (only each run's first `metadata` event and its `run_done`), `state_update` (the thread's
//! state after it was changed outside a run: `{"state", "thread_id"}`).
//!
//! Every event has an id: `{run_id}:{n}` for the `n`th event of a run (its `run_done` is
//! numbered after its last event), `state-{n}` for a state change. `Last-Event-ID` resumes
//! after that event, while this process remembers the thread's runs (see
//! [`REMEMBERED`](crate::runs::feed::REMEMBERED)) and keeps the run's events (a run in progress,
//! a recently ended one, or with PostgreSQL one that ended within the hour); otherwise, and
//! without `Last-Event-ID`, the stream starts now: with the rest of a run in progress, then
//! the runs that follow.

use super::respond::sse_response;
use super::threads::state_of;
use crate::app::App;
use crate::error::ApiError;
use crate::runs::Live;
use crate::runs::feed::{Entry, ThreadFeed};
use crate::runs::live::Frame;
use crate::wire::body::Query;
use crate::wire::sse;
use axum::body::{Body, Bytes};
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use futures::stream::{self, BoxStream, StreamExt};
use serde_json::json;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How long a stream may stay quiet before it sends a keep-alive comment.
const KEEP_ALIVE: Duration = Duration::from_secs(5);

/// Which of the thread's events a follower wants.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(clippy::struct_excessive_bools)] // one flag per mode of the wire protocol
struct ThreadModes {
    run_modes: bool,
    lifecycle: bool,
    state_update: bool,
}

impl ThreadModes {
    fn parse(query: &Query) -> Result<Self, ApiError> {
        let mut modes = Self::default();
        let mut asked = false;
        for (key, value) in &query.0 {
            if key != "stream_mode" && key != "stream_modes" {
                continue;
            }
            let names: Vec<String> = if value.trim_start().starts_with('[') {
                serde_json::from_str(value).map_err(|e| {
                    ApiError::Invalid(format!("`{key}` must be a mode or a list of modes, not {value:?}: {e}"))
                })?
            } else {
                value.split(',').map(str::trim).filter(|n| !n.is_empty()).map(str::to_owned).collect()
            };
            for name in names {
                match name.as_str() {
                    "run_modes" => modes.run_modes = true,
                    "lifecycle" => modes.lifecycle = true,
                    "state_update" => modes.state_update = true,
                    other => {
                        return Err(ApiError::Invalid(format!(
                            "Invalid stream mode: {other:?}: a thread's stream takes run_modes, lifecycle or state_update"
                        )));
                    }
                }
                asked = true;
            }
        }
        if !asked {
            modes.run_modes = true;
        }
        Ok(modes)
    }

    fn runs(self) -> bool {
        self.run_modes || self.lifecycle
    }

    /// Whether a run's event goes out: every one for `run_modes`, its start for `lifecycle`
    /// (the only `metadata` event a run sends is its first).
    fn passes(self, name: &str) -> bool {
        self.run_modes || (self.lifecycle && name == "metadata")
    }
}

/// Where a `Last-Event-ID` points.
#[derive(Debug, PartialEq, Eq)]
enum Resume {
    /// After event `n` of run `run`.
    Run { run: String, n: usize },
    /// After state change `n`.
    State(u64),
}

impl Resume {
    fn parse(id: &str) -> Option<Self> {
        if let Some(n) = id.strip_prefix("state-") {
            return n.parse().ok().map(Self::State);
        }
        let (run, n) = id.rsplit_once(':')?;
        Some(Self::Run { run: run.to_owned(), n: n.parse().ok()? })
    }
}

/// A run being followed.
struct Following {
    run: Arc<str>,
    live: Arc<Live>,
    frames: BoxStream<'static, Arc<Frame>>,
}

/// One client's place in a thread's stream.
struct Follower {
    app: Arc<App>,
    thread: String,
    feed: Arc<ThreadFeed>,
    woken: watch::Receiver<u64>,
    modes: ThreadModes,
    /// The last entry of the feed taken.
    at: Option<u64>,
    current: Option<Following>,
}

pub(super) async fn join(
    State(app): State<Arc<App>>,
    Path(thread): Path<String>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let modes = ThreadModes::parse(&Query::parse(raw.as_deref()))?;
    app.meta.thread(&thread).await?.ok_or_else(|| ApiError::thread_not_found(&thread))?;
    let feed = app.runs.feeds.thread(&thread);
    let woken = feed.subscribe();
    let mut follower = Follower { app, thread, feed, woken, modes, at: None, current: None };
    let last = headers.get("last-event-id").and_then(|v| v.to_str().ok()).and_then(Resume::parse);
    if !follower.resume(last).await {
        follower.start_now().await?;
    }
    let body = stream::unfold(follower, |mut follower| async move {
        let bytes = follower.next().await;
        Some((Ok::<_, Infallible>(bytes), follower))
    });
    Ok(sse_response(Body::from_stream(body)))
}

impl Follower {
    /// Places the follower after the event `last` names; whether this process remembers it.
    async fn resume(&mut self, last: Option<Resume>) -> bool {
        match last {
            Some(Resume::State(n)) if self.feed.has(n) => {
                self.at = Some(n);
                true
            }
            Some(Resume::Run { run, n }) => {
                let Some(at) = self.feed.run_entry(&run) else { return false };
                self.at = Some(at);
                if self.modes.runs() {
                    self.current = open(&self.app, &self.thread, &run, n + 1).await;
                }
                true
            }
            _ => false,
        }
    }

    /// Places the follower at the thread's present: inside the run in progress, if any.
    async fn start_now(&mut self) -> Result<(), ApiError> {
        // A run in progress that this process has not seen start: executed by another process
        // since before this one listened, or about to start here.
        if let Some(open) = self.app.meta.open_runs(&self.thread).await?.first() {
            self.app.runs.feeds.started(&self.thread, open);
        }
        let Some((n, entry)) = self.feed.last() else { return Ok(()) };
        self.at = Some(n);
        if let Entry::Run(run) = entry
            && let Some(live) = self.app.follow(&self.thread, &run).await?
            && live.outcome().is_none()
        {
            // A run that has sent nothing past its `metadata` has not started: all of it is ahead.
            let from = if live.len() <= 1 { 0 } else { live.len() };
            self.current = Some(Following { frames: Arc::clone(&live).follow(from), run, live });
        }
        Ok(())
    }

    /// The next bytes of the stream: an event, or a keep-alive comment after a quiet spell.
    async fn next(&mut self) -> Bytes {
        loop {
            if let Some(following) = &mut self.current {
                let frame = tokio::select! {
                    frame = following.frames.next() => frame,
                    () = tokio::time::sleep(KEEP_ALIVE) => return Bytes::from_static(sse::KEEP_ALIVE),
                };
                match frame {
                    Some(frame) if self.modes.passes(&frame.name) => {
                        let id = format!("{}:{}", following.run, frame.id);
                        return sse::event(&frame.name, &frame.data, Some(&id));
                    }
                    Some(_) => {}
                    None => {
                        let done = json!({"status": "run_done", "run_id": &*following.run});
                        let id = format!("{}:{}", following.run, following.live.len());
                        self.current = None;
                        return sse::event("metadata", &done.to_string(), Some(&id));
                    }
                }
                continue;
            }
            self.woken.borrow_and_update();
            match self.feed.after(self.at) {
                Some((n, Entry::Run(run))) => {
                    self.at = Some(n);
                    if self.modes.runs() {
                        self.current = open(&self.app, &self.thread, &run, 0).await;
                    }
                }
                Some((n, Entry::State)) => {
                    self.at = Some(n);
                    if self.modes.state_update
                        && let Some(bytes) = state_update(&self.app, &self.thread, n).await
                    {
                        return bytes;
                    }
                }
                None => {
                    // The feed, which this follower holds, holds the sender: `changed` never fails.
                    tokio::select! {
                        _ = self.woken.changed() => {}
                        () = tokio::time::sleep(KEEP_ALIVE) => return Bytes::from_static(sse::KEEP_ALIVE),
                    }
                }
            }
        }
    }
}

/// Run `run`'s events from its `from`th on, if they are still kept somewhere. (A free function:
/// a follower's run stream cannot be shared between threads, so no `&Follower` is held across
/// an await.)
async fn open(app: &Arc<App>, thread: &str, run: &str, from: usize) -> Option<Following> {
    match app.follow(thread, run).await {
        Ok(Some(live)) => {
            // After its `run_done` (numbered after its last event), nothing of it is left.
            if live.outcome().is_some() && from > live.len() {
                return None;
            }
            Some(Following { run: run.into(), frames: Arc::clone(&live).follow(from), live })
        }
        Ok(None) => None,
        Err(error) => {
            tracing::warn!(%thread, %run, %error, "a thread's follower could not read a run's events");
            None
        }
    }
}

/// The `state_update` event of state change `n`: the thread's state as it is now.
async fn state_update(app: &Arc<App>, thread: &str, n: u64) -> Option<Bytes> {
    match state_of(app, thread, None).await {
        Ok(state) => {
            let data = json!({"state": state, "thread_id": thread});
            Some(sse::event("state_update", &data.to_string(), Some(&format!("state-{n}"))))
        }
        Err(error) => {
            tracing::warn!(%thread, %error, "a thread's follower could not read its state");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modes(query: &str) -> Result<ThreadModes, ApiError> {
        ThreadModes::parse(&Query::parse(Some(query)))
    }

    #[test]
    fn modes_come_as_the_clients_send_them() {
        let all = ThreadModes { run_modes: true, lifecycle: true, state_update: true };
        assert_eq!(modes("").unwrap(), ThreadModes { run_modes: true, ..ThreadModes::default() });
        // Python's client repeats the key, LangGraph's server reads a comma-separated list,
        // JavaScript's client sends a JSON list.
        assert_eq!(modes("stream_mode=run_modes&stream_mode=lifecycle&stream_mode=state_update").unwrap(), all);
        assert_eq!(modes("stream_modes=run_modes,lifecycle,state_update").unwrap(), all);
        let json = "stream_mode=%5B%22run_modes%22%2C%22lifecycle%22%2C%22state_update%22%5D";
        assert_eq!(modes(json).unwrap(), all);
        assert_eq!(modes("stream_mode=lifecycle").unwrap(), ThreadModes { lifecycle: true, ..ThreadModes::default() });
        let refused = modes("stream_mode=values").unwrap_err();
        assert!(matches!(&refused, ApiError::Invalid(m) if m.contains("\"values\"")), "{refused}");
        assert!(modes("stream_mode=%5Bnot").is_err());
    }

    #[test]
    fn lifecycle_passes_only_a_runs_start() {
        let lifecycle = ThreadModes { lifecycle: true, ..ThreadModes::default() };
        assert!(lifecycle.passes("metadata"));
        assert!(!lifecycle.passes("values"));
        assert!(ThreadModes { run_modes: true, ..ThreadModes::default() }.passes("values"));
    }

    #[test]
    fn event_ids_name_a_run_and_a_position_or_a_state_change() {
        assert_eq!(Resume::parse("a-b:7"), Some(Resume::Run { run: "a-b".into(), n: 7 }));
        assert_eq!(Resume::parse("state-12"), Some(Resume::State(12)));
        for foreign in ["1712345678901-0", "-1", "run:x", "state-x", ""] {
            assert_eq!(Resume::parse(foreign), None, "{foreign}");
        }
    }
}
