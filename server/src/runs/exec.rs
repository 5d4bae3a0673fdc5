//! Executing one run: wait for the thread, run the graph, record how it ended, then let its
//! followers go (a client that sees the stream close can read the run's final status).

use super::live::{Cancel, Live};
use crate::app::App;
use crate::error::ApiError;
use crate::meta::RunEnd;
use crate::served::{Emitted, Outcome, RunSpec, Served, WireEvent, interrupts_by_task};
use futures::StreamExt;
use graphwright::Checkpointer;
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::Instrument;

pub(super) struct Job {
    pub(super) app: Arc<App>,
    pub(super) graph_id: String,
    pub(super) graph: Arc<dyn Served>,
    /// Where the graph keeps the run's checkpoints.
    pub(super) saver: Arc<dyn Checkpointer>,
    pub(super) spec: RunSpec,
    pub(super) live: Arc<Live>,
    /// A stateless run's thread, deleted when the run ends.
    pub(super) temporary: bool,
    /// Whether the run is in the server's records (every run but a stateless one a client is
    /// attached to): its turn is taken through them and its end is stored there.
    pub(super) recorded: bool,
    /// The run's place in its user's count of runs in flight, given back as the run ends.
    pub(super) slot: Option<super::quota::Slot>,
    /// The W3C `traceparent` of the request that made the run: its span continues that trace.
    #[cfg_attr(not(feature = "otel"), expect(dead_code, reason = "read by the `otel` feature's span"))]
    pub(super) traceparent: Option<String>,
    /// The run's place in its thread's line, taken as it was accepted (see [`Job::queue_up`]).
    pub(super) place: Option<Place>,
}

/// A place in the line for a thread's turn in this process.
pub(super) type Place = std::pin::Pin<Box<dyn Future<Output = ThreadTurn> + Send + Sync>>;

/// The `traceparent` of the span the caller is in (a request's), when spans are exported.
pub(super) fn traceparent_here() -> Option<String> {
    #[cfg(feature = "otel")]
    return graphwright::otel::traceparent(&tracing::Span::current());
    #[cfg(not(feature = "otel"))]
    None
}

/// How the graph part of a run ended.
enum Ended {
    Graph(Outcome),
    /// Stopped; what it finished stays.
    Cancelled,
    /// Stopped and undone: its checkpoints are deleted, and its record is to be.
    RolledBack,
}

/// A thread's turn in this process: its lock.
pub(super) type ThreadTurn = tokio::sync::OwnedMutexGuard<()>;

/// What the wait for a run's turn came to.
enum Waited {
    Turn(Result<Option<ThreadTurn>, Ended>),
    Cancelled(Cancel),
    /// The process is shutting down before the run's turn came.
    Drained,
}

impl Job {
    /// Takes the run's place in its thread's line now, as it is accepted: runs on a thread then
    /// start in the order they were accepted, not in the order their tasks happen to be first
    /// polled (a task spawned later can be polled first, and a run enqueued behind another
    /// could then start before it). With PostgreSQL the shared queue keeps that order instead.
    pub(super) fn queue_up(&mut self) {
        #[cfg(feature = "postgres")]
        if self.app.cluster.is_some() {
            return;
        }
        if !self.recorded {
            return;
        }
        let mut place: Place = Box::pin(self.app.runs.lock_for(&self.spec.thread_id).lock_owned());
        // Polled once, the lock's first-come-first-served queue has the run in it; the task
        // polls it again with its own waker when it starts.
        let mut nobody = std::task::Context::from_waker(std::task::Waker::noop());
        self.place = Some(match place.as_mut().poll(&mut nobody) {
            std::task::Poll::Ready(turn) => Box::pin(std::future::ready(turn)),
            std::task::Poll::Pending => place,
        });
    }

    /// Executes the run once its thread is free, and records how it ended.
    pub(super) async fn run(self) {
        drop(self.run_in_turn(None).await);
    }

    /// [`run`](Self::run), in the thread's turn `held` when given one (taken for runs to be
    /// executed one after the other before anything else on their thread: the runs a restarted
    /// process takes up again), which is then handed back once the run's end is recorded.
    pub(super) async fn run_in_turn(self, held: Option<ThreadTurn>) -> Option<ThreadTurn> {
        let span = self.span();
        self.run_traced(held).instrument(span).await
    }

    /// The span the run executes in: a child of the request that made it, when it was traced.
    fn span(&self) -> tracing::Span {
        let span = tracing::info_span!(
            "run",
            "otel.name" = format!("run {}", self.graph_id),
            "graphwright.run.id" = %self.live.run_id,
            "graphwright.graph" = %self.graph_id,
            "graphwright.assistant.id" = %self.spec.assistant_id,
            "gen_ai.conversation.id" = %self.spec.thread_id,
        );
        #[cfg(feature = "otel")]
        if let Some(traceparent) = &self.traceparent {
            graphwright::otel::set_parent(&span, traceparent, None);
        }
        span
    }

    async fn run_traced(mut self, mut held: Option<ThreadTurn>) -> Option<ThreadTurn> {
        let handed = held.is_some();
        let place = self.place.take();
        #[cfg(feature = "postgres")]
        let published = self
            .app
            .cluster
            .as_ref()
            .filter(|_| self.recorded)
            .map(|cluster| tokio::spawn(Arc::clone(cluster).publish(Arc::clone(&self.live))));
        let waited = tokio::select! {
            biased;
            // Cancelled before it started: there is nothing of it to undo.
            how = self.live.cancelled() => Waited::Cancelled(how),
            () = self.app.drained(), if self.recorded => Waited::Drained,
            turn = self.turn(&mut held, place) => Waited::Turn(turn),
        };
        let (ended, started) = match waited {
            Waited::Cancelled(how) => (ended_before_start(how), None),
            Waited::Drained => {
                // Left as it is recorded, for the next process (or another one) to take up.
                self.app.runs.forget(&self.live.run_id);
                return held;
            }
            Waited::Turn(Ok(guard)) => {
                let started = Instant::now();
                self.app.metrics.run_started(&self.graph_id);
                // The rollback happens before the thread is free, so the next run sees it done.
                let ended = self.execute().await;
                if handed {
                    held = guard;
                } else {
                    drop(guard);
                }
                (ended, Some(started))
            }
            Waited::Turn(Err(ended)) => (ended, None),
        };
        let outcome = self.record(ended, started).await;
        if let Outcome::Failed { error, message } = &outcome {
            self.live.push(&WireEvent { name: "error".into(), data: json!({"error": error, "message": message}) });
        }
        // Given back before followers hear of the end: a client that starts its next run as soon
        // as this one ends must find its place free.
        drop(self.slot.take());
        self.live.finish(outcome);
        self.app.runs.ended(&self.live.run_id);
        #[cfg(feature = "postgres")]
        if let Some(published) = published {
            // Before a stateless run's records go: its events are written under its record.
            let _ = published.await;
        }
        if self.temporary {
            let thread = self.spec.thread_id.clone();
            if let Err(error) = self.saver.delete_thread(&thread).await {
                tracing::warn!(%thread, %error, "could not delete a stateless run's checkpoints");
            }
            if self.recorded
                && let Err(error) = self.app.meta.delete_thread(&thread).await
            {
                tracing::warn!(%error, "could not delete a stateless run's thread");
            }
        }
        held
    }

    /// Waits for the run's turn on its thread and marks it running: the thread's lock in this
    /// process (`held`, if the run was handed it), or a claim on the shared run queue (held
    /// until the run's end is recorded).
    async fn turn(&self, held: &mut Option<ThreadTurn>, place: Option<Place>) -> Result<Option<ThreadTurn>, Ended> {
        let storage_failed = |error: ApiError| {
            Ended::Graph(Outcome::Failed { error: "StorageError".into(), message: error.to_string() })
        };
        if !self.recorded {
            // A thread of its own that nobody else knows: nothing to wait for.
            return Ok(None);
        }
        #[cfg(feature = "postgres")]
        if let Some(cluster) = &self.app.cluster {
            return match cluster.take_turn(&self.live.run_id, !self.temporary).await.map_err(storage_failed)? {
                crate::cluster::Turn::Claimed => Ok(None),
                crate::cluster::Turn::Cancelled(how) => Err(ended_before_start(how)),
                crate::cluster::Turn::Gone => Err(Ended::Graph(Outcome::Failed {
                    error: "WorkerLostError".into(),
                    message: "the run was ended by another server process before it started".into(),
                })),
            };
        }
        let guard = match (held.take(), place) {
            (Some(guard), _) => guard,
            (None, Some(place)) => place.await,
            (None, None) => self.app.runs.lock_for(&self.spec.thread_id).lock_owned().await,
        };
        self.app.meta.set_running(&self.live.run_id).await.map_err(storage_failed)?;
        // The run enters its thread's feed as it starts (with PostgreSQL the claim above
        // announces it to every process instead, this one included).
        if !self.temporary {
            self.app.runs.feeds.started(&self.spec.thread_id, &self.live.run_id);
        }
        Ok(Some(guard))
    }

    async fn execute(&self) -> Ended {
        if let Some(how) = self.live.cancel_requested() {
            return ended_before_start(how);
        }
        // Where a rollback returns the thread to: ids are ordered by creation, so every
        // checkpoint the run writes sorts after one made now, and no read is needed.
        let start = graphwright::checkpoint::new_checkpoint_id();
        let mut waited = Duration::ZERO;
        let mut events = match self.graph.start(self.spec.clone()).await {
            Ok(events) => events,
            Err(error) => {
                return Ended::Graph(Outcome::Failed { error: kind_of(&error).into(), message: error.to_string() });
            }
        };
        let (mut sent, mut repeated) = (0_usize, 0_usize);
        loop {
            tokio::select! {
                biased;
                how = self.live.cancelled() => {
                    drop(events);
                    return match how {
                        Cancel::Interrupt => Ended::Cancelled,
                        Cancel::Rollback => self.roll_back(&start).await,
                    };
                }
                item = events.next() => match item {
                    Some(Emitted::Event(_)) if repeated > 0 => repeated -= 1,
                    Some(Emitted::Event(event)) => {
                        sent += 1;
                        self.live.push(&event);
                    }
                    Some(Emitted::Done(outcome)) => {
                        // The run's turn on its thread is its own by now, so a claim refused as
                        // busy is one being let go: a process that died and whose sessions end
                        // one by one, or a run cancelled in another process whose release is
                        // still on its way to the store. The run waits for it instead of failing.
                        // Nothing ran, so the only events sent were the stream's opening ones,
                        // which the next try repeats: they are not sent again.
                        if self.recorded && waited < CLAIM_PATIENCE && is_thread_busy(&outcome) {
                            drop(events);
                            tokio::time::sleep(CLAIM_RETRY).await;
                            waited += CLAIM_RETRY;
                            repeated = sent;
                            events = match self.graph.start(self.spec.clone()).await {
                                Ok(events) => events,
                                Err(error) => return Ended::Graph(Outcome::Failed {
                                    error: kind_of(&error).into(),
                                    message: error.to_string(),
                                }),
                            };
                            continue;
                        }
                        return Ended::Graph(outcome);
                    }
                    None => return Ended::Graph(Outcome::Failed {
                        error: "RunError".into(),
                        message: "the run stopped without reporting how it ended".into(),
                    }),
                },
            }
        }
    }

    /// Deletes what the cancelled run wrote to its thread: the checkpoints after `start`.
    async fn roll_back(&self, start: &str) -> Ended {
        match self.saver.delete_after(&self.spec.thread_id, Some(start)).await {
            Ok(()) => Ended::RolledBack,
            Err(error) => Ended::Graph(Outcome::Failed {
                error: "StorageError".into(),
                message: format!("the run was cancelled but could not be rolled back: {error}"),
            }),
        }
    }

    /// Stores how the run ended (its status, the thread's status, values and interrupts), and
    /// returns the outcome its followers get. `started`: when it started executing, if it did.
    async fn record(&self, ended: Ended, started: Option<Instant>) -> Outcome {
        let thread = self.spec.thread_id.clone();
        // The thread's state is what its record keeps, and a cancelled run's result. A finished
        // run's final values are that state, with nothing pending: no read is needed.
        let (values, interrupts) = match &ended {
            Ended::Graph(Outcome::Finished { values }) => (values.clone(), Map::new()),
            Ended::Graph(_) if !self.recorded => (Value::Null, Map::new()),
            _ => match self.graph.state(&thread, None).await {
                Ok(Some(state)) => (state["values"].clone(), interrupts_by_task(&state)),
                _ => (Value::Null, Map::new()),
            },
        };
        let (run_status, thread_status, outcome) = match ended {
            Ended::Graph(outcome @ Outcome::Finished { .. }) => (Some("success"), "idle", outcome),
            Ended::Graph(outcome @ Outcome::Interrupted { .. }) => (Some("success"), "interrupted", outcome),
            Ended::Graph(outcome @ Outcome::Failed { .. }) => (Some("error"), "error", outcome),
            Ended::Cancelled => {
                let outcome = Outcome::Finished { values: values.clone() };
                (Some("interrupted"), if interrupts.is_empty() { "idle" } else { "interrupted" }, outcome)
            }
            Ended::RolledBack => {
                let outcome = Outcome::Failed {
                    error: "CancelledError".into(),
                    message: "the run was cancelled and rolled back: what it wrote to the thread is deleted".into(),
                };
                // The run's record is deleted.
                (None, if interrupts.is_empty() { "idle" } else { "interrupted" }, outcome)
            }
        };
        if let Some(started) = started {
            self.app.metrics.run_ended(&self.graph_id, run_status.unwrap_or("rolled_back"), started.elapsed());
        }
        if !self.recorded {
            return outcome;
        }
        let end = RunEnd {
            thread_id: thread,
            run_id: self.live.run_id.clone(),
            run_status,
            thread_status,
            values,
            interrupts: Value::Object(interrupts),
        };
        if let Err(error) = self.app.meta.end_run(end).await {
            tracing::error!(run = %self.live.run_id, %error, "could not record how a run ended");
        }
        outcome
    }
}

/// How long a run waits for its thread's claim to be given up by the holder letting it go (a
/// process that died, a cancelled run's release), and how often it looks.
const CLAIM_PATIENCE: Duration = Duration::from_secs(10);
const CLAIM_RETRY: Duration = Duration::from_millis(100);

/// Whether a run ended because another holder had its thread's claim.
fn is_thread_busy(outcome: &Outcome) -> bool {
    matches!(outcome, Outcome::Failed { error, .. } if error == "ThreadBusy")
}

/// How a run asked to stop before it started ends: there is nothing of it to undo.
fn ended_before_start(how: Cancel) -> Ended {
    match how {
        Cancel::Interrupt => Ended::Cancelled,
        Cancel::Rollback => Ended::RolledBack,
    }
}

fn kind_of(error: &ApiError) -> &'static str {
    match error {
        ApiError::BadRequest(_) | ApiError::Invalid(_) => "ValueError",
        ApiError::Storage(_) => "StorageError",
        _ => "GraphError",
    }
}
