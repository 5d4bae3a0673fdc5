//! Several server processes on one PostgreSQL database: one run queue, and runs that any
//! process can follow, join and cancel.
//!
//! - **Liveness.** Each process holds a session advisory lock keyed by its owner id on a
//!   connection of its own; PostgreSQL drops it when the process (or that connection) dies.
//!   Every run records the owner that accepted it.
//! - **The queue.** A run starts when its process claims it: one conditional `UPDATE` that
//!   succeeds only for the oldest open run of its thread that nobody asked to cancel, so runs
//!   on a thread execute one at a time, in order, whichever process accepted them.
//! - **Followers elsewhere.** The executing process writes the run's events to
//!   `gw_run_events` as they come, then its outcome; a process asked to join or stream a run it
//!   does not execute copies them into a local [`Live`], woken by `NOTIFY`.
//! - **Thread streams.** A claim announces the run's start by `NOTIFY` (and a state change
//!   outside a run is announced too), so every process's thread feeds list the thread's runs
//!   in the order they ran, whoever executes them; a follower copies each run as above.
//! - **Cancellation elsewhere.** A cancel is stored on the run and announced by `NOTIFY`; the
//!   owner stops the run, and a run not yet started sees it when it tries to claim its turn.
//!   The owner's sweep also looks for the cancels of its runs each second, so one whose
//!   notification was lost (with a connection) still stops its run.
//! - **Orphans.** Every process sweeps for open runs whose owner's lock is free and takes them
//!   over: each becomes the sweeper's, `pending`, and is executed there as a restarted SQLite
//!   server executes the runs it finds (`runs::resume`: a run in flight goes on from its
//!   checkpoints), its events going on under the next ids, so followers anywhere keep
//!   following it. A run started `Server::max_attempts` times, its process dying each time,
//!   is marked `error` instead, and its thread freed.

use crate::error::ApiError;
use crate::meta::RUN_COLUMNS;
use crate::meta::postgres::{CHANNEL, OWNER_LOCK, PgMeta, pg};
use crate::meta::{Unfinished, run_json};
use crate::runs::live::Frame;
use crate::runs::{Cancel, Live, Runs};
use crate::sealed::open_run;
use crate::sealed::{Row, Sealer};
use crate::served::Outcome;
use crate::time;
use crate::time::now_ms;
use futures::{FutureExt, StreamExt};
use graphwright::checkpoint::deadpool_postgres::Pool;
use graphwright::checkpoint::deadpool_postgres::tokio_postgres::{self, AsyncMessage, NoTls};
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// How often each process looks for orphaned runs.
const SWEEP_EVERY: Duration = Duration::from_secs(1);
/// How often waiting claims and followers look again when no notification came (one may be
/// lost with a connection).
const POLL_EVERY: Duration = Duration::from_millis(500);
/// How long the events of an ended run are kept for late joiners.
const KEEP_EVENTS: Duration = Duration::from_hours(1);
/// Events are pruned once every this many sweeps.
const PRUNE_EVERY: u32 = 60;

/// Whether a run may start.
pub(crate) enum Turn {
    /// Claimed: this process executes it now.
    Claimed,
    /// Someone asked it to stop before it started.
    Cancelled(Cancel),
    /// It ended without running (its process was found dead) or was deleted.
    Gone,
}

/// This process's part in the cluster.
pub(crate) struct Cluster {
    meta: PgMeta,
    /// Seals the events and outcomes written for other processes.
    sealer: Sealer,
    /// Bumped when a run ends anywhere (claims waiting for their turn look again).
    ended: watch::Sender<u64>,
    /// Bumped when a run elsewhere published events (followers look again).
    events: watch::Sender<u64>,
    /// Bumped when a cron is created, changed or deleted by any process (schedulers look again).
    crons: watch::Sender<u64>,
    /// Where the runs this process takes over from processes that are gone go, to be executed.
    adopted: mpsc::UnboundedSender<Vec<Unfinished>>,
    /// How many times a run may be started (`Server::max_attempts`).
    max_attempts: u32,
    /// The runs this process executes (a cancel whose notification was lost is applied here).
    runs: Arc<Runs>,
    /// Set once the connection holding this process's liveness lock is gone.
    lost: watch::Sender<bool>,
    /// The connection holding this process's liveness lock and listening for notifications.
    _lease: tokio_postgres::Client,
}

fn cancel_name(how: Cancel) -> &'static str {
    match how {
        Cancel::Interrupt => "interrupt",
        Cancel::Rollback => "rollback",
    }
}

fn cancel_of(name: &str) -> Option<Cancel> {
    match name {
        "interrupt" => Some(Cancel::Interrupt),
        "rollback" => Some(Cancel::Rollback),
        _ => None,
    }
}

fn encode(outcome: &Outcome) -> String {
    serde_json::to_string(outcome).unwrap_or_else(|_| "null".to_owned())
}

impl Cluster {
    /// Joins the cluster on the database at `url`: connects this process's lease connection,
    /// takes a free owner id's liveness lock, listens for notifications, opens the records
    /// over `pool`, and starts the orphan sweep.
    pub(crate) async fn start(
        url: &str,
        pool: Pool,
        runs: Arc<Runs>,
        sealer: Sealer,
        adopted: mpsc::UnboundedSender<Vec<Unfinished>>,
        max_attempts: u32,
    ) -> Result<Arc<Self>, ApiError> {
        let mut config: tokio_postgres::Config = url.parse()?;
        // Named, so that an operator (or a test) can tell a process's lease among the sessions.
        config.application_name(format!("graphwright-server lease {}", std::process::id()));
        let (lease, mut connection) = config.connect(NoTls).await?;
        let lost = watch::Sender::new(false);
        let lost_tx = lost.clone();
        let ended = watch::Sender::new(0);
        let events = watch::Sender::new(0);
        let crons = watch::Sender::new(0);
        let (ended_tx, events_tx, crons_tx) = (ended.clone(), events.clone(), crons.clone());
        let notified = Arc::clone(&runs);
        tokio::spawn(async move {
            let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
            while let Some(message) = messages.next().await {
                match message {
                    Ok(AsyncMessage::Notification(note)) => {
                        dispatch(note.payload(), &notified, &ended_tx, &events_tx, &crons_tx);
                    }
                    Ok(_) => {}
                    Err(error) => {
                        tracing::error!(error = %pg(&error), "the server's PostgreSQL lease connection failed");
                        break;
                    }
                }
            }
            tracing::error!(
                "the server's PostgreSQL lease connection is closed: the other processes now take this process's \
                 runs over; it stops serving (ServerError::LeaseLost)"
            );
            lost_tx.send_replace(true);
        });
        let owner = take_owner_id(&lease).await?;
        lease.batch_execute(&format!("LISTEN {CHANNEL}")).await?;
        let meta = PgMeta::open(pool, owner).await?;
        let cluster =
            Arc::new(Self { meta, sealer, ended, events, crons, adopted, max_attempts, runs, lost, _lease: lease });
        let weak = Arc::downgrade(&cluster);
        tokio::spawn(async move {
            let mut round = 0u32;
            loop {
                let Some(cluster) = weak.upgrade() else { return };
                if let Err(error) = cluster.sweep(round.is_multiple_of(PRUNE_EVERY)).await {
                    tracing::warn!(%error, "could not look for runs of server processes that are gone");
                }
                drop(cluster);
                round = round.wrapping_add(1);
                tokio::time::sleep(SWEEP_EVERY).await;
            }
        });
        Ok(cluster)
    }

    /// Resolves once this process's lease connection is gone: the other processes take its
    /// runs over from then on.
    pub(crate) async fn lease_lost(&self) {
        // The sender lives in `self`: `wait_for` fails only if it is dropped, never here.
        let _ = self.lease_watch().wait_for(|lost| *lost).await;
    }

    /// Becomes `true` once this process's lease connection is gone (and ends with the cluster).
    pub(crate) fn lease_watch(&self) -> watch::Receiver<bool> {
        self.lost.subscribe()
    }

    /// The records, as this process writes them.
    pub(crate) fn meta(&self) -> &PgMeta {
        &self.meta
    }

    /// Changes whenever any process announces that crons changed.
    pub(crate) fn cron_changes(&self) -> watch::Receiver<u64> {
        self.crons.subscribe()
    }

    /// Claims `run` if it is its thread's turn; `None` while an earlier run of its thread is
    /// open. With `announce`, a claim tells every process (this one included) that the run
    /// started, in the same statement: claims of a thread's runs commit one after the other,
    /// so every process learns of its runs' starts in the order they ran.
    async fn claim(&self, run: &str, announce: bool) -> Result<Option<Turn>, ApiError> {
        let client = self.meta.client().await?;
        let claimed: i64 = client
            .query_one(
                "WITH claimed AS (
                     UPDATE gw_runs r SET status = 'running', updated_at = $2, started_at = COALESCE(r.started_at, $2)
                     WHERE r.run_id = $1 AND r.status = 'pending' AND r.cancel IS NULL AND NOT EXISTS (
                         SELECT 1 FROM gw_runs o WHERE o.thread_id = r.thread_id
                             AND o.status IN ('pending', 'running') AND o.seq < r.seq)
                     RETURNING r.thread_id),
                 told AS (SELECT pg_notify($4, 'started ' || $1 || ' ' || thread_id) FROM claimed WHERE $3)
                 SELECT (SELECT count(*) FROM claimed), (SELECT count(*) FROM told)",
                &[&run, &time::now(), &announce, &CHANNEL],
            )
            .await?
            .try_get(0)?;
        if claimed == 1 {
            return Ok(Some(Turn::Claimed));
        }
        let row = client.query_opt("SELECT status, cancel FROM gw_runs WHERE run_id = $1", &[&run]).await?;
        let Some(row) = row else { return Ok(Some(Turn::Gone)) };
        let (status, cancel): (String, Option<String>) = (row.try_get(0)?, row.try_get(1)?);
        Ok(match cancel.as_deref().and_then(cancel_of) {
            Some(how) => Some(Turn::Cancelled(how)),
            None if status == "pending" => None,
            None => Some(Turn::Gone),
        })
    }

    /// Waits for `run`'s turn and claims it; with `announce`, its start is told to the
    /// followers of its thread in every process.
    pub(crate) async fn take_turn(&self, run: &str, announce: bool) -> Result<Turn, ApiError> {
        let mut ended = self.ended.subscribe();
        loop {
            ended.borrow_and_update();
            if let Some(turn) = self.claim(run, announce).await? {
                return Ok(turn);
            }
            tokio::select! {
                _ = ended.changed() => {}
                () = tokio::time::sleep(POLL_EVERY) => {}
            }
        }
    }

    /// Asks the process executing `run` to stop it; whether the run was open to be asked.
    pub(crate) async fn cancel(&self, run: &str, how: Cancel) -> Result<bool, ApiError> {
        let client = self.meta.client().await?;
        let name = cancel_name(how);
        let asked = client
            .execute(
                "UPDATE gw_runs SET cancel = $2 WHERE run_id = $1 AND status IN ('pending', 'running') AND cancel IS NULL",
                &[&run, &name],
            )
            .await?;
        if asked == 1 {
            client.execute("SELECT pg_notify($1, 'cancel ' || $2 || ' ' || $3)", &[&CHANNEL, &name, &run]).await?;
        }
        Ok(asked == 1)
    }

    /// Tells every process (this one included) that `thread`'s state was changed outside a run.
    pub(crate) async fn state_changed(&self, thread: &str) -> Result<(), ApiError> {
        let client = self.meta.client().await?;
        client.execute("SELECT pg_notify($1, 'state ' || $2)", &[&CHANNEL, &thread]).await?;
        Ok(())
    }

    /// Writes the events of a run this process executes for followers elsewhere, then its
    /// outcome. Ends when the run has ended.
    pub(crate) async fn publish(self: Arc<Self>, live: Arc<Live>) {
        let mut frames = Arc::clone(&live).follow(0);
        let mut batch: Vec<Arc<Frame>> = Vec::new();
        let mut open = true;
        while open {
            match frames.next().await {
                Some(frame) => batch.push(frame),
                None => break,
            }
            // Whatever else is already there goes in the same statement.
            loop {
                match frames.next().now_or_never() {
                    Some(Some(frame)) => batch.push(frame),
                    Some(None) => {
                        open = false;
                        break;
                    }
                    None => break,
                }
            }
            if let Err(error) = self.insert_events(&live.run_id, &batch).await {
                // A rolled-back run's record, and so its events, are deleted: nobody follows it.
                tracing::debug!(run = %live.run_id, %error, "could not publish a run's events");
            }
            batch.clear();
        }
        if let Some(outcome) = live.outcome()
            && let Err(error) = self.write_outcome(&live.run_id, &outcome).await
        {
            tracing::warn!(run = %live.run_id, %error, "could not publish how a run ended");
        }
    }

    async fn insert_events(&self, run: &str, batch: &[Arc<Frame>]) -> Result<(), ApiError> {
        let seqs: Vec<i32> = batch.iter().map(|f| i32::try_from(f.id).unwrap_or(i32::MAX)).collect();
        let names: Vec<&str> = batch.iter().map(|f| f.name.as_str()).collect();
        let data: Vec<Cow<'_, str>> = batch
            .iter()
            .map(|f| self.sealer.seal_text(&f.data, Row::run(run), format_args!("event {}", f.id)))
            .collect::<Result<_, _>>()?;
        let data: Vec<&str> = data.iter().map(AsRef::as_ref).collect();
        let client = self.meta.client().await?;
        // One round trip: the insert, then the notification (sent when it commits).
        client
            .execute(
                "WITH inserted AS (
                     INSERT INTO gw_run_events (run_id, seq, name, data)
                     SELECT $1, s, n, d FROM unnest($2::integer[], $3::text[], $4::text[]) AS e (s, n, d)
                     ON CONFLICT DO NOTHING RETURNING 1)
                 SELECT pg_notify($5, 'events ' || $1) FROM (SELECT count(*) FROM inserted) AS done",
                &[&run, &seqs, &names, &data, &CHANNEL],
            )
            .await?;
        Ok(())
    }

    async fn write_outcome(&self, run: &str, outcome: &Outcome) -> Result<(), ApiError> {
        let client = self.meta.client().await?;
        // The outcome an orphan sweep already gave the run stays: its followers were told it.
        client
            .execute(
                "WITH written AS (
                     UPDATE gw_runs SET outcome = COALESCE(outcome, $2), ended_at_ms = COALESCE(ended_at_ms, $3)
                     WHERE run_id = $1 RETURNING 1)
                 SELECT pg_notify($4, 'events ' || $1) FROM (SELECT count(*) FROM written) AS done",
                &[
                    &run,
                    &self.sealer.seal_text(&encode(outcome), Row::run(run), "outcome")?.as_ref(),
                    &now_ms(),
                    &CHANNEL,
                ],
            )
            .await?;
        Ok(())
    }

    /// The events `run` published so far (a run taken over from a process that is gone), for
    /// its new executor to continue under the next ids.
    pub(crate) async fn published(&self, run: &str) -> Result<Vec<(String, String)>, ApiError> {
        let client = self.meta.client().await?;
        let rows =
            client.query("SELECT seq, name, data FROM gw_run_events WHERE run_id = $1 ORDER BY seq", &[&run]).await?;
        let mut events = Vec::with_capacity(rows.len());
        for row in rows {
            let (seq, name, data): (i32, String, String) = (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
            if usize::try_from(seq).ok() != Some(events.len()) {
                return Err(ApiError::Storage(format!("run {run}'s events have a gap before {seq}")));
            }
            events.push((name, self.sealer.open_text(data, Row::run(run), format_args!("event {seq}"))?));
        }
        Ok(events)
    }

    /// A local copy of the progress of a run another process executes (or executed), kept up
    /// to date until it ends; shared by every local follower.
    pub(crate) fn follow(self: &Arc<Self>, runs: &Arc<Runs>, thread: &str, run: &str, resumable: bool) -> Arc<Live> {
        let (live, added) = runs.add_if_absent(Live::remote(run.to_owned(), thread.to_owned(), resumable));
        if added {
            let (cluster, runs, copy) = (Arc::clone(self), Arc::clone(runs), Arc::clone(&live));
            tokio::spawn(async move {
                cluster.copy(&copy).await;
                runs.ended(&copy.run_id);
            });
        }
        live
    }

    async fn copy(&self, live: &Live) {
        let (mut events, mut ended) = (self.events.subscribe(), self.ended.subscribe());
        let mut relayed = false;
        loop {
            events.borrow_and_update();
            ended.borrow_and_update();
            match self.copy_round(live).await {
                Ok(Some(outcome)) => {
                    live.finish(outcome);
                    return;
                }
                Ok(None) => {}
                Err(error) => tracing::warn!(run = %live.run_id, %error, "could not read a run's events"),
            }
            tokio::select! {
                how = live.cancelled(), if !relayed => {
                    relayed = true;
                    if let Err(error) = self.cancel(&live.run_id, how).await {
                        tracing::warn!(run = %live.run_id, %error, "could not ask for a run to be cancelled");
                    }
                }
                _ = events.changed() => {}
                _ = ended.changed() => {}
                () = tokio::time::sleep(POLL_EVERY) => {}
            }
        }
    }

    /// Copies the events not copied yet; the outcome once the run has ended.
    async fn copy_round(&self, live: &Live) -> Result<Option<Outcome>, ApiError> {
        let client = self.meta.client().await?;
        // The outcome first: it is written after every event, so the events read next are all.
        let row = client.query_opt("SELECT outcome FROM gw_runs WHERE run_id = $1", &[&live.run_id]).await?;
        let outcome = match row {
            None => Some(Outcome::Failed {
                error: "CancelledError".into(),
                message: "the run was deleted (rolled back) while it was followed".into(),
            }),
            Some(row) => {
                let stored: Option<String> = row.try_get(0)?;
                stored
                    .map(|text| {
                        let text = self.sealer.open_text(text, Row::run(&live.run_id), "outcome")?;
                        serde_json::from_str(&text).map_err(|e| {
                            ApiError::Storage(format!("run {}'s stored outcome is damaged: {e}", live.run_id))
                        })
                    })
                    .transpose()?
            }
        };
        let from = i32::try_from(live.len()).unwrap_or(i32::MAX);
        let rows = client
            .query(
                "SELECT seq, name, data FROM gw_run_events WHERE run_id = $1 AND seq >= $2 ORDER BY seq",
                &[&live.run_id, &from],
            )
            .await?;
        for row in rows {
            let (seq, name, data): (i32, String, String) = (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
            let data = self.sealer.open_text(data, Row::run(&live.run_id), format_args!("event {seq}"))?;
            // Frames are numbered by position: a gap would shift every later id.
            if usize::try_from(seq).ok() != Some(live.len()) {
                return Err(ApiError::Storage(format!("run {}'s events have a gap before {seq}", live.run_id)));
            }
            live.push_encoded(name, data);
        }
        Ok(outcome)
    }

    /// Ends a dead process's run that was started too often (`attempt` times) as failed, frees
    /// its thread unless another run of it is open, and tells its followers.
    async fn give_up(
        &self,
        tx: &tokio_postgres::Transaction<'_>,
        id: &str,
        thread: &str,
        attempt: i32,
    ) -> Result<(), ApiError> {
        let encoded = encode(&crate::meta::attempts_exhausted(attempt));
        let outcome = self.sealer.seal_text(&encoded, Row::run(id), "outcome")?;
        crate::meta::postgres::give_up_in(tx, thread, id, &outcome).await
    }

    /// Applies the cancels of this process's runs no notification brought, and takes over the
    /// open runs of processes that are gone: each is this process's again, to be executed here
    /// (a run already started `max_attempts` times is marked failed instead, and its thread
    /// freed); with `prune`, also drops the events of runs that ended long ago.
    async fn sweep(&self, prune: bool) -> Result<(), ApiError> {
        let mut client = self.meta.client().await?;
        // Cancels of this process's runs whose notification never came (a notification is lost
        // with the connection it was sent to): stored with the run, they are applied here.
        let asked = client
            .query(
                "SELECT run_id, cancel FROM gw_runs
                 WHERE owner = $1 AND status IN ('pending', 'running') AND cancel IS NOT NULL",
                &[&self.meta.owner],
            )
            .await?;
        for row in asked {
            let (run, how): (String, String) = (row.try_get(0)?, row.try_get(1)?);
            if let (Some(how), Some(live)) = (cancel_of(&how), self.runs.get(&run))
                && !live.remote
            {
                live.cancel(how);
            }
        }
        let owners = client
            .query(
                "SELECT DISTINCT owner FROM gw_runs WHERE status IN ('pending', 'running') AND owner <> $1",
                &[&self.meta.owner],
            )
            .await?;
        for row in owners {
            let owner: i32 = row.try_get(0)?;
            let tx = client.transaction().await?;
            // The owner's lock can be taken only if no live session holds it; taken for this
            // transaction only, it also keeps two sweepers from taking the same runs.
            let gone: bool =
                tx.query_one("SELECT pg_try_advisory_xact_lock($1, $2)", &[&OWNER_LOCK, &owner]).await?.try_get(0)?;
            if !gone {
                continue;
            }
            let open = tx
                .query(
                    &format!(
                        "SELECT {RUN_COLUMNS}, caller, attempt, started_at FROM gw_runs
                         WHERE owner = $1 AND status IN ('pending', 'running') ORDER BY seq"
                    ),
                    &[&owner],
                )
                .await?;
            let now = time::now();
            let mut adopted = Vec::new();
            let mut failed = 0;
            for row in &open {
                let run = run_json(row)?;
                let (caller, attempt, started_at): (Option<String>, i32, Option<String>) =
                    (row.try_get(9)?, row.try_get(10)?, row.try_get(11)?);
                let id = run["run_id"].as_str().unwrap_or_default().to_owned();
                let thread = run["thread_id"].as_str().unwrap_or_default().to_owned();
                let started = run["status"] == "running";
                let next = u32::try_from(attempt).unwrap_or(1) + u32::from(started);
                if next > self.max_attempts {
                    self.give_up(&tx, &id, &thread, attempt).await?;
                    failed += 1;
                    continue;
                }
                tx.execute(
                    "UPDATE gw_runs SET owner = $2, status = 'pending', attempt = $3, updated_at = $4 WHERE run_id = $1",
                    &[&id, &self.meta.owner, &i32::try_from(next).unwrap_or(i32::MAX), &now],
                )
                .await?;
                let run = open_run(&self.sealer, run)?;
                let caller = caller.as_deref().map_or(serde_json::Value::Null, crate::meta::parse);
                let caller = self.sealer.open(caller, Row::run(&id), "caller")?;
                adopted.push(Unfinished { run, caller, started_at, attempt: next });
            }
            tx.commit().await?;
            if failed > 0 {
                tracing::error!(
                    owner,
                    runs = failed,
                    "runs a server process that is gone left unfinished were started too often: marked `error`"
                );
            }
            if !adopted.is_empty() {
                tracing::warn!(
                    owner,
                    runs = adopted.len(),
                    "runs of a server process that is gone are taken over by this one"
                );
                // Nobody to execute them only when this process is going away itself.
                let _ = self.adopted.send(adopted);
            }
        }
        if prune {
            let before = now_ms() - i64::try_from(KEEP_EVENTS.as_millis()).unwrap_or(i64::MAX);
            client
                .execute(
                    "DELETE FROM gw_run_events e USING gw_runs r WHERE e.run_id = r.run_id AND r.ended_at_ms < $1",
                    &[&before],
                )
                .await?;
        }
        Ok(())
    }
}

/// Takes the liveness lock of an owner id no live process holds.
async fn take_owner_id(client: &tokio_postgres::Client) -> Result<i32, ApiError> {
    for _ in 0..16 {
        let id = i32::try_from(uuid::Uuid::new_v4().as_u128() as u32 >> 1).unwrap_or(1);
        if id == 0 {
            continue;
        }
        let locked: bool =
            client.query_one("SELECT pg_try_advisory_lock($1, $2)", &[&OWNER_LOCK, &id]).await?.try_get(0)?;
        if locked {
            return Ok(id);
        }
    }
    Err(ApiError::Storage("every server owner id tried is held by another live process".into()))
}

/// Acts on a notification: stops a run this process executes, wakes waiting claims,
/// followers and the cron scheduler, or adds a run's start or a state change to its thread's
/// feed.
fn dispatch(
    payload: &str,
    runs: &Runs,
    ended: &watch::Sender<u64>,
    events: &watch::Sender<u64>,
    crons: &watch::Sender<u64>,
) {
    // A thread id is the client's and may hold spaces: it comes last, whole.
    if let Some(("state", thread)) = payload.split_once(' ') {
        runs.feeds.state_changed(thread);
        return;
    }
    let mut words = payload.splitn(3, ' ');
    match (words.next(), words.next(), words.next()) {
        (Some("started"), Some(run), Some(thread)) => runs.feeds.started(thread, run),
        (Some("cancel"), Some(how), Some(run)) => {
            if let (Some(how), Some(live)) = (cancel_of(how), runs.get(run))
                && !live.remote
            {
                live.cancel(how);
            }
        }
        (Some("ended"), ..) => ended.send_modify(|n| *n += 1),
        (Some("events"), ..) => events.send_modify(|n| *n += 1),
        (Some("crons"), ..) => crons.send_modify(|n| *n += 1),
        _ => tracing::debug!(payload, "an unknown notification on the server's channel"),
    }
}
