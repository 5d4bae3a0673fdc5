//! Whether the process that holds a claim is still alive, for claims shared through one file.
//!
//! Each saver that claims a thread first takes an exclusive lock on a file of its own, named
//! after its owner id, in a directory beside the database, and holds it for as long as it
//! lives. The operating system releases the lock when the process exits or dies, so another
//! process that finds a claim held by that owner can tell whether it is still held: if it can
//! lock the owner's file, the owner is gone and the claim may be taken over.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// This saver's identity in the claims table, and the lock that proves it alive.
pub(super) struct Owner {
    pub(super) id: String,
    /// The directory of owner files, beside the database (none for an in-memory database,
    /// which no other process can open).
    dir: Option<PathBuf>,
    /// The locked file, taken at the first claim.
    file: Mutex<Option<File>>,
}

impl Owner {
    pub(super) fn new(database: Option<&Path>) -> Self {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let dir = database.filter(|p| !p.as_os_str().is_empty()).map(|p| {
            let mut name = p.file_name().unwrap_or_default().to_os_string();
            name.push("-owners");
            p.with_file_name(name)
        });
        Self { id, dir, file: Mutex::new(None) }
    }

    /// Locks this owner's file, once, before its first claim is written.
    pub(super) fn announce(&self) -> std::io::Result<()> {
        let Some(dir) = &self.dir else { return Ok(()) };
        let mut file = self.file.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if file.is_some() {
            return Ok(());
        }
        std::fs::create_dir_all(dir)?;
        let opened = OpenOptions::new().create(true).truncate(false).write(true).open(dir.join(&self.id))?;
        opened.try_lock().map_err(|e| match e {
            TryLockError::Error(e) => e,
            TryLockError::WouldBlock => std::io::Error::other("another saver holds this owner id"),
        })?;
        *file = Some(opened);
        Ok(())
    }

    /// Whether the owner `id` is alive. An owner whose file is gone, or can be locked, is not;
    /// its file is removed on the way.
    pub(super) fn is_alive(&self, id: &str) -> std::io::Result<bool> {
        let Some(dir) = &self.dir else { return Ok(true) };
        let path = dir.join(id);
        let file = match OpenOptions::new().write(true).open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        match file.try_lock() {
            Ok(()) => {
                // Removed while locked, so no owner can be using it.
                let _ = std::fs::remove_file(&path);
                Ok(false)
            }
            Err(TryLockError::WouldBlock) => Ok(true),
            Err(TryLockError::Error(e)) => Err(e),
        }
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        let file = self.file.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let (Some(file), Some(dir)) = (file, &self.dir) {
            let _ = std::fs::remove_file(dir.join(&self.id));
            drop(file);
        }
    }
}
