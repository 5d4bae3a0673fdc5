//! [`Encrypted`] as a [`Checkpointer`]: checkpoint and write bodies sealed, bound to their rows.

use super::{ENCRYPTED_FORMAT, Encrypted};
use crate::checkpoint::{BatchOp, CheckpointError, CheckpointRecord, Checkpointer, Claim, ListFilter, WriteRecord};
use futures::FutureExt;
use futures::future::BoxFuture;

/// What a checkpoint's ciphertext is bound to: its row (thread and id) and its format, so a
/// record copied to another row or thread does not decrypt there.
fn checkpoint_aad(thread: &str, id: &str, format: u16) -> Vec<u8> {
    let mut aad = Vec::with_capacity(32 + thread.len() + id.len());
    aad.extend_from_slice(b"graphwright checkpoint\0");
    aad.extend_from_slice(thread.as_bytes());
    aad.push(0);
    aad.extend_from_slice(id.as_bytes());
    aad.push(0);
    aad.extend_from_slice(&format.to_be_bytes());
    aad
}

/// What a write's ciphertext is bound to: its thread, checkpoint, task, index and format.
fn write_aad(write: &WriteRecord, format: u16) -> Vec<u8> {
    let mut aad = Vec::with_capacity(40 + write.thread_id.len() + write.checkpoint_id.len());
    aad.extend_from_slice(b"graphwright write\0");
    aad.extend_from_slice(write.thread_id.as_bytes());
    aad.push(0);
    aad.extend_from_slice(write.checkpoint_id.as_bytes());
    aad.push(0);
    aad.extend_from_slice(&write.task.to_be_bytes());
    aad.extend_from_slice(&write.index.to_be_bytes());
    aad.extend_from_slice(&format.to_be_bytes());
    aad
}

impl<C: Checkpointer> Encrypted<C> {
    fn seal_checkpoint(&self, mut record: CheckpointRecord) -> Result<CheckpointRecord, CheckpointError> {
        let format = record.format | ENCRYPTED_FORMAT;
        let aad = checkpoint_aad(&record.thread_id, &record.id, format);
        record.body = self.keys.seal(&record.body, &aad).map_err(|reason| {
            CheckpointError::backend(
                format!("encrypted checkpoint {} of thread `{}`", record.id, record.thread_id),
                reason,
            )
        })?;
        record.format = format;
        Ok(record)
    }

    fn seal_write(&self, mut write: WriteRecord) -> Result<WriteRecord, CheckpointError> {
        let format = write.format | ENCRYPTED_FORMAT;
        let aad = write_aad(&write, format);
        write.body = self.keys.seal(&write.body, &aad).map_err(|reason| {
            CheckpointError::backend(
                format!("encrypted a write of checkpoint {} of thread `{}`", write.checkpoint_id, write.thread_id),
                reason,
            )
        })?;
        write.format = format;
        Ok(write)
    }

    fn seal_writes(&self, writes: Vec<WriteRecord>) -> Result<Vec<WriteRecord>, CheckpointError> {
        writes.into_iter().map(|w| self.seal_write(w)).collect()
    }

    fn open_checkpoint(&self, mut record: CheckpointRecord) -> Result<CheckpointRecord, CheckpointError> {
        if record.format & ENCRYPTED_FORMAT == 0 {
            return Ok(record);
        }
        let aad = checkpoint_aad(&record.thread_id, &record.id, record.format);
        record.body = self.keys.open(&record.body, &aad).map_err(|reason| CheckpointError::Corrupt {
            thread: record.thread_id.clone(),
            checkpoint: record.id.clone(),
            field: "body".to_owned(),
            reason,
        })?;
        record.format &= !ENCRYPTED_FORMAT;
        Ok(record)
    }

    fn open_write(&self, mut write: WriteRecord) -> Result<WriteRecord, CheckpointError> {
        if write.format & ENCRYPTED_FORMAT == 0 {
            return Ok(write);
        }
        let aad = write_aad(&write, write.format);
        write.body = self.keys.open(&write.body, &aad).map_err(|reason| CheckpointError::Corrupt {
            thread: write.thread_id.clone(),
            checkpoint: write.checkpoint_id.clone(),
            field: format!("writes[{}.{}].body", write.task, write.index),
            reason,
        })?;
        write.format &= !ENCRYPTED_FORMAT;
        Ok(write)
    }
}

impl<C: Checkpointer> Checkpointer for Encrypted<C> {
    fn claim<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<Claim, CheckpointError>> {
        self.inner.claim(thread)
    }

    fn forget_claim(&self, claim: &Claim) {
        self.inner.forget_claim(claim);
    }

    fn release<'a>(&'a self, claim: &'a Claim) -> BoxFuture<'a, Result<(), CheckpointError>> {
        self.inner.release(claim)
    }

    fn put<'a>(
        &'a self,
        claim: &'a Claim,
        record: CheckpointRecord,
        expected_head: Option<String>,
        writes: Vec<WriteRecord>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        match self.seal_checkpoint(record).and_then(|r| Ok((r, self.seal_writes(writes)?))) {
            Ok((record, writes)) => self.inner.put(claim, record, expected_head, writes),
            Err(error) => async move { Err(error) }.boxed(),
        }
    }

    fn put_writes<'a>(
        &'a self,
        claim: &'a Claim,
        writes: Vec<WriteRecord>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        match self.seal_writes(writes) {
            Ok(writes) => self.inner.put_writes(claim, writes),
            Err(error) => async move { Err(error) }.boxed(),
        }
    }

    fn put_batch<'a>(&'a self, claim: &'a Claim, ops: Vec<BatchOp>) -> BoxFuture<'a, Result<(), CheckpointError>> {
        let sealed = ops
            .into_iter()
            .map(|op| match op {
                BatchOp::Writes(writes) => Ok(BatchOp::Writes(self.seal_writes(writes)?)),
                BatchOp::Put { record, expected_head, writes } => Ok(BatchOp::Put {
                    record: self.seal_checkpoint(record)?,
                    expected_head,
                    writes: self.seal_writes(writes)?,
                }),
            })
            .collect::<Result<Vec<_>, CheckpointError>>();
        match sealed {
            Ok(ops) => self.inner.put_batch(claim, ops),
            Err(error) => async move { Err(error) }.boxed(),
        }
    }

    fn get<'a>(
        &'a self,
        thread: &'a str,
        id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<CheckpointRecord>, CheckpointError>> {
        async move { self.inner.get(thread, id).await?.map(|r| self.open_checkpoint(r)).transpose() }.boxed()
    }

    fn list<'a>(
        &'a self,
        thread: &'a str,
        filter: &'a ListFilter,
    ) -> BoxFuture<'a, Result<Vec<CheckpointRecord>, CheckpointError>> {
        async move { self.inner.list(thread, filter).await?.into_iter().map(|r| self.open_checkpoint(r)).collect() }
            .boxed()
    }

    fn writes<'a>(
        &'a self,
        thread: &'a str,
        checkpoint: &'a str,
    ) -> BoxFuture<'a, Result<Vec<WriteRecord>, CheckpointError>> {
        async move { self.inner.writes(thread, checkpoint).await?.into_iter().map(|w| self.open_write(w)).collect() }
            .boxed()
    }

    fn delete_thread<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<(), CheckpointError>> {
        self.inner.delete_thread(thread)
    }

    fn delete_after<'a>(
        &'a self,
        thread: &'a str,
        after: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        self.inner.delete_after(thread, after)
    }

    fn prune_to_head<'a>(
        &'a self,
        claim: &'a Claim,
        head: CheckpointRecord,
        subgraph_keys: Vec<String>,
    ) -> BoxFuture<'a, Result<usize, CheckpointError>> {
        match self.seal_checkpoint(head) {
            Ok(head) => self.inner.prune_to_head(claim, head, subgraph_keys),
            Err(error) => async move { Err(error) }.boxed(),
        }
    }

    fn thread_keys<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<Vec<String>, CheckpointError>> {
        self.inner.thread_keys(thread)
    }

    // `copy_thread` keeps the provided method, which reads through this wrapper and writes
    // through it: each record is decrypted and encrypted again for its new row. A backend's
    // own copy would carry ciphertexts bound to the old thread.

    fn stores_in_memory(&self) -> bool {
        self.inner.stores_in_memory()
    }
}
