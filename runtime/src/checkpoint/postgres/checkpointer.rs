//! [`Checkpointer`] for [`PostgresSaver`]: each method as one or a few statements over the
//! saver's pool.

use super::saver::{PostgresSaver, check_claim, insert_writes, pg, put_in};
use super::sql::{
    CLAIM_OF, CLAIM_SHARED, HEAD, LOCK_THREAD, SELECT_CHECKPOINT, THREAD_LOCK, checkpoint_row, write_row,
};
use crate::checkpoint::{
    BatchOp, CheckpointError, CheckpointRecord, Checkpointer, Claim, ListFilter, Source, WriteRecord,
};
use futures::FutureExt;
use futures::future::BoxFuture;

impl Checkpointer for PostgresSaver {
    fn claim<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<Claim, CheckpointError>> {
        async move {
            {
                let mut held = self.held();
                if held.contains_key(thread) {
                    return Err(CheckpointError::Busy {
                        thread: thread.to_owned(),
                        holder: Some("a run of this process".to_owned()),
                    });
                }
                held.insert(thread.to_owned(), 0);
            }
            let result = self.claim_in_store(thread).await;
            match &result {
                Ok(claim) => self.held().insert(thread.to_owned(), claim.fence()),
                Err(_) => self.held().remove(thread),
            };
            result
        }
        .boxed()
    }

    fn forget_claim(&self, claim: &Claim) {
        let mut held = self.held();
        if held.get(claim.thread()) == Some(&claim.fence()) {
            held.remove(claim.thread());
        }
    }

    fn release<'a>(&'a self, claim: &'a Claim) -> BoxFuture<'a, Result<(), CheckpointError>> {
        async move {
            self.forget_claim(claim);
            let op = &format!("released thread `{}`", claim.thread());
            let Some(owner) = self.owner.alive.lock().await.as_ref().map(|(id, _)| *id) else { return Ok(()) };
            let client = self.client(op).await?;
            let fence = i64::try_from(claim.fence()).unwrap_or(i64::MAX);
            client
                .execute(
                    "UPDATE graphwright_claims SET owner = 0 WHERE thread_id = $1 AND owner = $2 AND fence = $3",
                    &[&claim.thread(), &owner, &fence],
                )
                .await
                .map_err(pg(op))?;
            Ok(())
        }
        .boxed()
    }

    fn put<'a>(
        &'a self,
        claim: &'a Claim,
        record: CheckpointRecord,
        expected_head: Option<String>,
        writes: Vec<WriteRecord>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        self.put_batch(claim, vec![BatchOp::Put { record, expected_head, writes }])
    }

    fn put_batch<'a>(&'a self, claim: &'a Claim, ops: Vec<BatchOp>) -> BoxFuture<'a, Result<(), CheckpointError>> {
        async move {
            let op = &match ops.as_slice() {
                [BatchOp::Put { record, .. }] => {
                    format!("stored checkpoint {} of thread `{}`", record.id, record.thread_id)
                }
                _ => format!("stored a batch of {} checkpoint operation(s)", ops.len()),
            };
            let owner = self.owner_id().await?;
            let mut client = self.client(op).await?;
            let tx = client.transaction().await.map_err(pg(op))?;
            // The thread's lock serializes puts (the head's compare-and-set) and claims.
            tx.execute(LOCK_THREAD, &[&THREAD_LOCK, &claim.thread()]).await.map_err(pg(op))?;
            check_claim(claim, owner, tx.query_opt(CLAIM_OF, &[&claim.thread()]).await.map_err(pg(op))?.as_ref())?;
            for batch_op in ops {
                match batch_op {
                    BatchOp::Writes(writes) => insert_writes(&tx, &writes).await.map_err(pg(op))?,
                    BatchOp::Put { record, expected_head, writes } => {
                        put_in(&tx, op, record, expected_head, &writes).await?;
                    }
                }
            }
            tx.commit().await.map_err(pg(op))
        }
        .boxed()
    }

    fn put_writes<'a>(
        &'a self,
        claim: &'a Claim,
        writes: Vec<WriteRecord>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        async move {
            let op = &format!("stored {} task write(s)", writes.len());
            let owner = self.owner_id().await?;
            let mut client = self.client(op).await?;
            let tx = client.transaction().await.map_err(pg(op))?;
            // A row lock: a takeover of the claim waits until these writes are in.
            let row = tx.query_opt(CLAIM_SHARED, &[&claim.thread()]).await.map_err(pg(op))?;
            check_claim(claim, owner, row.as_ref())?;
            insert_writes(&tx, &writes).await.map_err(pg(op))?;
            tx.commit().await.map_err(pg(op))
        }
        .boxed()
    }

    fn get<'a>(
        &'a self,
        thread: &'a str,
        id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<CheckpointRecord>, CheckpointError>> {
        async move {
            let op = &format!("read thread `{thread}`");
            let client = self.client(op).await?;
            // The checkpoint `id`, or with no id the newest.
            let select = client
                .prepare_cached(&format!(
                    "{SELECT_CHECKPOINT} WHERE thread_id = $1 AND ($2::text IS NULL OR id = $2) ORDER BY id DESC LIMIT 1"
                ))
                .await
                .map_err(pg(op))?;
            let row = client.query_opt(&select, &[&thread, &id]).await;
            row.map_err(pg(op))?.map(|row| checkpoint_row(thread, &row)).transpose()
        }
        .boxed()
    }

    fn list<'a>(
        &'a self,
        thread: &'a str,
        filter: &'a ListFilter,
    ) -> BoxFuture<'a, Result<Vec<CheckpointRecord>, CheckpointError>> {
        async move {
            let op = &format!("listed thread `{thread}`");
            let client = self.client(op).await?;
            let select = client
                .prepare_cached(&format!(
                    "{SELECT_CHECKPOINT} WHERE thread_id = $1 AND ($2::text IS NULL OR id < $2) \
                     AND ($3::text IS NULL OR source = $3) ORDER BY id DESC LIMIT $4"
                ))
                .await
                .map_err(pg(op))?;
            // LIMIT NULL is no limit.
            let limit = filter.limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
            let rows = client
                .query(&select, &[&thread, &filter.before, &filter.source.map(Source::as_str), &limit])
                .await
                .map_err(pg(op))?;
            rows.iter().map(|row| checkpoint_row(thread, row)).collect()
        }
        .boxed()
    }

    fn writes<'a>(
        &'a self,
        thread: &'a str,
        checkpoint: &'a str,
    ) -> BoxFuture<'a, Result<Vec<WriteRecord>, CheckpointError>> {
        async move {
            let op = &format!("read the writes of checkpoint {checkpoint} of thread `{thread}`");
            let client = self.client(op).await?;
            let select = client
                .prepare_cached(
                    "SELECT task, idx, format, body FROM graphwright_writes \
                     WHERE thread_id = $1 AND checkpoint_id = $2 ORDER BY task, idx",
                )
                .await
                .map_err(pg(op))?;
            let rows = client.query(&select, &[&thread, &checkpoint]).await.map_err(pg(op))?;
            rows.iter().map(|row| write_row(thread, checkpoint, row)).collect()
        }
        .boxed()
    }

    fn delete_thread<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<(), CheckpointError>> {
        async move {
            let op = &format!("deleted thread `{thread}`");
            let mut client = self.client(op).await?;
            let tx = client.transaction().await.map_err(pg(op))?;
            // Under the thread's lock, so a put racing the delete lands wholly before or after it.
            tx.execute(LOCK_THREAD, &[&THREAD_LOCK, &thread]).await.map_err(pg(op))?;
            tx.execute("DELETE FROM graphwright_writes WHERE thread_id = $1", &[&thread]).await.map_err(pg(op))?;
            tx.execute("DELETE FROM graphwright_checkpoints WHERE thread_id = $1", &[&thread]).await.map_err(pg(op))?;
            self.fence_off(tx, thread, op).await
        }
        .boxed()
    }

    fn prune_to_head<'a>(
        &'a self,
        claim: &'a Claim,
        head: CheckpointRecord,
        subgraph_keys: Vec<String>,
    ) -> BoxFuture<'a, Result<usize, CheckpointError>> {
        async move {
            crate::checkpoint::check_prune(claim, &head, &subgraph_keys)?;
            let op = &format!("pruned the history of thread `{}`", claim.thread());
            let owner = self.owner_id().await?;
            let mut client = self.client(op).await?;
            let tx = client.transaction().await.map_err(pg(op))?;
            // The thread's lock, as a put takes it: a put racing the prune lands wholly before
            // it (and the prune finds a new head) or after it.
            tx.execute(LOCK_THREAD, &[&THREAD_LOCK, &claim.thread()]).await.map_err(pg(op))?;
            check_claim(claim, owner, tx.query_opt(CLAIM_OF, &[&claim.thread()]).await.map_err(pg(op))?.as_ref())?;
            let found: Option<String> =
                tx.query_one(HEAD, &[&head.thread_id]).await.and_then(|r| r.try_get(0)).map_err(pg(op))?;
            if found.as_deref() != Some(head.id.as_str()) {
                return Err(CheckpointError::Conflict { thread: head.thread_id, expected: Some(head.id), found });
            }
            let created_at_ms = i64::try_from(head.created_at_ms).unwrap_or(i64::MAX);
            tx.execute(
                "UPDATE graphwright_checkpoints SET parent_id = $3, step = $4, source = $5, created_at_ms = $6, \
                 format = $7, body = $8 WHERE thread_id = $1 AND id = $2",
                &[
                    &head.thread_id,
                    &head.id,
                    &head.parent_id,
                    &head.step,
                    &head.source.as_str(),
                    &created_at_ms,
                    &i32::from(head.format),
                    &head.body,
                ],
            )
            .await
            .map_err(pg(op))?;
            tx.execute(
                "DELETE FROM graphwright_writes WHERE thread_id = $1 AND checkpoint_id <> $2",
                &[&head.thread_id, &head.id],
            )
            .await
            .map_err(pg(op))?;
            let mut deleted = tx
                .execute(
                    "DELETE FROM graphwright_checkpoints WHERE thread_id = $1 AND id <> $2",
                    &[&head.thread_id, &head.id],
                )
                .await
                .map_err(pg(op))?;
            if !subgraph_keys.is_empty() {
                tx.execute("DELETE FROM graphwright_writes WHERE thread_id = ANY($1)", &[&subgraph_keys])
                    .await
                    .map_err(pg(op))?;
                deleted += tx
                    .execute("DELETE FROM graphwright_checkpoints WHERE thread_id = ANY($1)", &[&subgraph_keys])
                    .await
                    .map_err(pg(op))?;
                // The keys name tasks of deleted checkpoints, so no run claims them again.
                tx.execute("DELETE FROM graphwright_claims WHERE thread_id = ANY($1)", &[&subgraph_keys])
                    .await
                    .map_err(pg(op))?;
            }
            tx.commit().await.map_err(pg(op))?;
            Ok(usize::try_from(deleted).unwrap_or(usize::MAX))
        }
        .boxed()
    }

    fn thread_keys<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<Vec<String>, CheckpointError>> {
        async move {
            let nested = format!("{thread}{}", crate::checkpoint::NAMESPACE_SEPARATOR);
            let op = &format!("listed the keys of thread `{thread}`");
            let client = self.client(op).await?;
            let rows = client
                .query(
                    "SELECT DISTINCT thread_id FROM graphwright_checkpoints WHERE thread_id = $1 OR left(thread_id, length($2)) = $2",
                    &[&thread, &nested],
                )
                .await
                .map_err(pg(op))?;
            rows.iter().map(|r| r.try_get(0).map_err(pg(op))).collect()
        }
        .boxed()
    }

    fn delete_after<'a>(
        &'a self,
        thread: &'a str,
        after: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        async move {
            let after = after.unwrap_or_default();
            let nested = format!("{thread}{}", crate::checkpoint::NAMESPACE_SEPARATOR);
            let op = &format!("rolled thread `{thread}` back to checkpoint `{after}`");
            let mut client = self.client(op).await?;
            let tx = client.transaction().await.map_err(pg(op))?;
            tx.execute(LOCK_THREAD, &[&THREAD_LOCK, &thread]).await.map_err(pg(op))?;
            // Ids are fixed-width and ordered by creation (collation "C"), so "newer" is a text
            // comparison.
            let of_thread = "(thread_id = $1 OR left(thread_id, length($2)) = $2)";
            tx.execute(
                &format!("DELETE FROM graphwright_writes WHERE {of_thread} AND checkpoint_id > $3"),
                &[&thread, &nested, &after],
            )
            .await
            .map_err(pg(op))?;
            tx.execute(
                &format!("DELETE FROM graphwright_checkpoints WHERE {of_thread} AND id > $3"),
                &[&thread, &nested, &after],
            )
            .await
            .map_err(pg(op))?;
            self.fence_off(tx, thread, op).await
        }
        .boxed()
    }
}
