//! Executing one run: wait for the thread, run the graph, record how it ended, then let its
//! followers go (a client that sees the stream close can read the run's final status).

use super::live::{Cancel, Live};
use crate::app::App;
use crate::error::ApiError;
use crate::meta;
use crate::served::{Emitted, Outcome, RunSpec, Served, WireEvent, interrupts_by_task};
use futures::StreamExt;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// Not a status: a rolled-back run's record is deleted.
const ROLLED_BACK: &str = "";

pub(super) struct Job {
    pub(super) app: Arc<App>,
    pub(super) graph: Arc<dyn Served>,
    pub(super) spec: RunSpec,
    pub(super) live: Arc<Live>,
    /// A stateless run's thread, deleted when the run ends.
    pub(super) temporary: bool,
}

/// How the graph part of a run ended.
enum Ended {
    Graph(Outcome),
    /// Stopped; what it finished stays.
    Cancelled,
    /// Stopped and undone: its checkpoints are deleted, and its record is to be.
    RolledBack,
}

impl Job {
    pub(super) async fn run(self) {
        let lock = self.app.runs.lock_for(&self.spec.thread_id);
        let ended = tokio::select! {
            biased;
            // Cancelled before it started: there is nothing of it to undo.
            how = self.live.cancelled() => match how {
                Cancel::Interrupt => Ended::Cancelled,
                Cancel::Rollback => Ended::RolledBack,
            },
            guard = lock.lock_owned() => {
                // The rollback happens under the thread's lock, so the next run sees it done.
                let ended = self.execute().await;
                drop(guard);
                ended
            }
        };
        let outcome = self.record(ended).await;
        if let Outcome::Failed { error, message } = &outcome {
            self.live.push(&WireEvent { name: "error".into(), data: json!({"error": error, "message": message}) });
        }
        self.live.finish(outcome);
        self.app.runs.ended(&self.live.run_id);
        if self.temporary {
            let thread = self.spec.thread_id.clone();
            if let Err(error) = self.app.saver.delete_thread(&thread).await {
                tracing::warn!(%thread, %error, "could not delete a stateless run's checkpoints");
            }
            let result = self.app.meta.call(move |conn| Ok(meta::delete_thread(conn, &thread)?)).await;
            if let Err(error) = result {
                tracing::warn!(%error, "could not delete a stateless run's thread");
            }
        }
    }

    async fn execute(&self) -> Ended {
        match self.live.cancel_requested() {
            Some(Cancel::Interrupt) => return Ended::Cancelled,
            Some(Cancel::Rollback) => return Ended::RolledBack,
            None => {}
        }
        let run_id = self.live.run_id.clone();
        if let Err(error) = self.app.meta.call(move |conn| Ok(meta::set_run_status(conn, &run_id, "running")?)).await {
            return Ended::Graph(Outcome::Failed { error: "StorageError".into(), message: error.to_string() });
        }
        // Where a rollback returns the thread to: ids are ordered by creation, so every
        // checkpoint the run writes sorts after one made now, and no read is needed.
        let start = graphwright::checkpoint::new_checkpoint_id();
        let mut events = match self.graph.start(self.spec.clone()).await {
            Ok(events) => events,
            Err(error) => {
                return Ended::Graph(Outcome::Failed { error: kind_of(&error).into(), message: error.to_string() });
            }
        };
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
                    Some(Emitted::Event(event)) => self.live.push(&event),
                    Some(Emitted::Done(outcome)) => return Ended::Graph(outcome),
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
        match self.app.saver.delete_after(&self.spec.thread_id, Some(start)).await {
            Ok(()) => Ended::RolledBack,
            Err(error) => Ended::Graph(Outcome::Failed {
                error: "StorageError".into(),
                message: format!("the run was cancelled but could not be rolled back: {error}"),
            }),
        }
    }

    /// Stores how the run ended (its status, the thread's status, values and interrupts), and
    /// returns the outcome its followers get.
    async fn record(&self, ended: Ended) -> Outcome {
        let thread = self.spec.thread_id.clone();
        let state = self.graph.state(&thread, None).await;
        let (values, interrupts) = match &state {
            Ok(Some(state)) => (state["values"].clone(), interrupts_by_task(state)),
            _ => (Value::Null, Map::new()),
        };
        let (run_status, thread_status, outcome) = match ended {
            Ended::Graph(outcome @ Outcome::Finished { .. }) => ("success", "idle", outcome),
            Ended::Graph(outcome @ Outcome::Interrupted { .. }) => ("success", "interrupted", outcome),
            Ended::Graph(outcome @ Outcome::Failed { .. }) => ("error", "error", outcome),
            Ended::Cancelled => {
                let outcome = Outcome::Finished { values: values.clone() };
                ("interrupted", if interrupts.is_empty() { "idle" } else { "interrupted" }, outcome)
            }
            Ended::RolledBack => {
                let outcome = Outcome::Failed {
                    error: "CancelledError".into(),
                    message: "the run was cancelled and rolled back: what it wrote to the thread is deleted".into(),
                };
                (ROLLED_BACK, if interrupts.is_empty() { "idle" } else { "interrupted" }, outcome)
            }
        };
        let run_id = self.live.run_id.clone();
        let interrupts = Value::Object(interrupts);
        let stored = self
            .app
            .meta
            .call(move |conn| {
                let tx = meta::write(conn)?;
                if run_status == ROLLED_BACK {
                    meta::delete_run(&tx, &thread, &run_id)?;
                } else {
                    meta::set_run_status(&tx, &run_id, run_status)?;
                }
                // Another run queued on the thread keeps it busy.
                let status = if meta::open_runs(&tx, &thread)?.is_empty() { thread_status } else { "busy" };
                meta::set_thread_state(&tx, &thread, status, &values, &interrupts)?;
                tx.commit()?;
                Ok(())
            })
            .await;
        if let Err(error) = stored {
            tracing::error!(run = %self.live.run_id, %error, "could not record how a run ended");
        }
        outcome
    }
}

fn kind_of(error: &ApiError) -> &'static str {
    match error {
        ApiError::BadRequest(_) | ApiError::Invalid(_) => "ValueError",
        ApiError::Storage(_) => "StorageError",
        _ => "GraphError",
    }
}
