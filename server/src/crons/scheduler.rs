//! The scheduler each server process runs: it sleeps until the earliest next run time among the
//! crons (or until crons change), claims the firings that are due, and makes their runs.

use super::alarm::Alarm;
use super::now_ms;
use super::request;
use super::schedule::Schedule;
use crate::app::App;
use crate::error::ApiError;
use crate::meta::crons::CronRecord;
use crate::runs;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// The longest the scheduler sleeps without looking again: a change of the wall clock (the
/// sleep runs on the monotonic one), or a notification lost with a database connection,
/// delays a firing by this much at most.
const LONGEST_SLEEP: Duration = Duration::from_mins(1);

/// How long the scheduler waits before trying again when the records cannot be read.
const AFTER_FAILURE: Duration = Duration::from_secs(1);

/// Changes announced by other processes (PostgreSQL); none otherwise.
#[cfg(feature = "postgres")]
type Remote = Option<tokio::sync::watch::Receiver<u64>>;
#[cfg(not(feature = "postgres"))]
type Remote = ();

/// Wakes the schedulers: this process's at once, the others' through the database.
pub(super) async fn changed(app: &App) {
    app.crons.ring();
    if let Err(error) = app.meta.announce_cron_change().await {
        tracing::warn!(%error, "could not tell the other server processes that crons changed; they see it within a minute");
    }
}

/// Starts `app`'s scheduler. It stops once the app is gone (the server was dropped).
pub(crate) fn start(app: &Arc<App>) {
    let weak = Arc::downgrade(app);
    let alarm = app.crons.clone();
    #[cfg(feature = "postgres")]
    let remote = app.cluster.as_ref().map(|cluster| cluster.cron_changes());
    #[cfg(not(feature = "postgres"))]
    let remote = ();
    tokio::spawn(run(weak, alarm, remote));
}

async fn run(app: Weak<App>, alarm: Alarm, mut remote: Remote) {
    loop {
        let Some(strong) = app.upgrade() else { return };
        let sleep = match fire_due(&strong).await {
            Ok(Some(next)) => Duration::from_millis(u64::try_from(next - now_ms()).unwrap_or(0)).min(LONGEST_SLEEP),
            Ok(None) => LONGEST_SLEEP,
            Err(error) => {
                tracing::warn!(%error, "the cron scheduler could not read the crons; it tries again in a second");
                AFTER_FAILURE
            }
        };
        drop(strong);
        tokio::select! {
            () = tokio::time::sleep(sleep) => {}
            () = alarm.rung() => {}
            () = remote_change(&mut remote) => {}
        }
    }
}

/// Waits for another process to announce that crons changed; forever without PostgreSQL.
#[cfg(feature = "postgres")]
async fn remote_change(remote: &mut Remote) {
    if let Some(changes) = remote
        && changes.changed().await.is_ok()
    {
        return;
    }
    // Without a cluster, or once its listener is gone: only the sleep and the alarm wake.
    std::future::pending::<()>().await;
}

#[cfg(not(feature = "postgres"))]
async fn remote_change((): &mut Remote) {
    std::future::pending::<()>().await;
}

/// Fires every cron that is due and whose firing this process claims; the earliest time a
/// cron may fire next.
async fn fire_due(app: &Arc<App>) -> Result<Option<i64>, ApiError> {
    let now = now_ms();
    for cron in app.meta.due_crons(now).await? {
        let Some(due) = cron.next_run_ms else { continue };
        let next = Schedule::parse(&cron.schedule, cron.timezone.as_deref()).map(|schedule| schedule.next_after(now));
        // A firing missed while no process ran is made once, and the cron goes on from now.
        let claimed = app.meta.claim_cron(&cron.cron_id, due, next.as_ref().ok().copied().flatten()).await?;
        match next {
            Ok(_) if claimed => fire(app, &cron, due).await,
            Ok(_) => {}
            Err(error) => tracing::error!(
                cron = %cron.cron_id, %error,
                "a cron's stored schedule cannot be read; the cron is stopped until its schedule is changed"
            ),
        }
    }
    app.meta.next_cron_due(now_ms()).await
}

/// Makes the run of `cron`'s firing at `due_ms`, as a client's run request would.
async fn fire(app: &Arc<App>, cron: &CronRecord, due_ms: i64) {
    let body = match request::firing(cron, due_ms) {
        Ok(body) => body,
        Err(error) => {
            tracing::error!(cron = %cron.cron_id, %error, "a cron's stored run request cannot be read; its firing is skipped");
            return;
        }
    };
    match runs::create(app, cron.thread_id.clone(), body, runs::Attached::Background).await {
        Ok(accepted) => tracing::debug!(cron = %cron.cron_id, run = %accepted.run["run_id"], "a cron fired"),
        Err(error) => {
            if let Some(thread) = &cron.thread_id
                && matches!(app.meta.thread(thread).await, Ok(None))
            {
                // Deleted while the cron was created: the cron goes with its thread.
                if let Err(error) = app.meta.delete_cron(&cron.cron_id).await {
                    tracing::warn!(cron = %cron.cron_id, %error, "could not delete the cron of a deleted thread");
                }
                changed(app).await;
                return;
            }
            tracing::warn!(
                cron = %cron.cron_id, %error,
                "a cron's run could not be made; the cron fires again at its next time"
            );
        }
    }
}
