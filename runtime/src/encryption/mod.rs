//! Encryption at rest: checkpoints, task writes and store values behind AES-256-GCM, over any
//! backend ([`Encrypted`]), under keys that can be rotated ([`Keys`]).

mod checkpoints;
mod store;

use aes_gcm::aead::{Aead, Generate, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine as _;
use sha2::{Digest, Sha256};
use std::fmt;
use std::sync::Arc;

/// The bit of a checkpoint's or write's `format` that marks its body as encrypted. The runtime's own formats
/// are small numbers, so the bit never clashes with one, and a record stored before encryption
/// was turned on (the bit clear) is read as it was.
pub const ENCRYPTED_FORMAT: u16 = 0x8000;

/// The layout of an encrypted body: this version byte, the key's id, the nonce, then the
/// ciphertext with its tag.
const LAYOUT: u8 = 1;
const ID_LEN: usize = 4;
const NONCE_LEN: usize = 12;
const HEADER_LEN: usize = 1 + ID_LEN + NONCE_LEN;

/// A key that cannot be used: not base64, or not 32 bytes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The text is not base64.
    #[error("the AES key is not base64 ({0}): give 32 random bytes in base64, e.g. from `openssl rand -base64 32`")]
    NotBase64(String),
    /// The key is not 32 bytes long.
    #[error("the AES key is {0} bytes long; AES-256 needs 32 (e.g. `openssl rand -base64 32`)")]
    Length(usize),
}

/// Encryption or decryption that failed: why, and for a missing key, which key is needed.
#[derive(Debug, thiserror::Error)]
#[error("{reason}")]
pub struct EncryptionError {
    reason: String,
}

/// The id of a key: the first bytes of a hash of it, stored beside each record it encrypts, so
/// that the key a record needs can be named without revealing the key.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyId([u8; ID_LEN]);

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyId({self})")
    }
}

#[derive(Clone)]
struct Key {
    id: KeyId,
    cipher: Aes256Gcm,
}

impl Key {
    fn new(bytes: &[u8]) -> Result<Self, KeyError> {
        let cipher = Aes256Gcm::new_from_slice(bytes).map_err(|_| KeyError::Length(bytes.len()))?;
        let digest = Sha256::new().chain_update(b"graphwright key id\0").chain_update(bytes).finalize();
        let mut id = [0; ID_LEN];
        id.copy_from_slice(&digest[..ID_LEN]);
        Ok(Self { id: KeyId(id), cipher })
    }

    fn from_base64(text: &str) -> Result<Self, KeyError> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| KeyError::NotBase64(e.to_string()))?;
        Self::new(&bytes)
    }
}

/// The keys of an [`Encrypted`] checkpointer: the current one, which encrypts every record
/// written, and older ones, which only decrypt what they wrote. To rotate, make the new key
/// current and list the old one with [`Keys::with_old`] until nothing written under it is
/// read any more.
///
/// The keys are never printed: `Debug` shows their ids only. Cloning shares nothing mutable:
/// one set of keys can serve a saver, a store and the server's records.
///
/// ```
/// use graphwright::encryption::Keys;
///
/// let old = Keys::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")?;
/// let keys = Keys::new(&[7; 32])?.with_old(&[0; 32])?;
/// assert_ne!(keys.id(), old.id());
/// assert!(Keys::from_base64("c2hvcnQ=").is_err()); // 5 bytes
/// # Ok::<(), graphwright::encryption::KeyError>(())
/// ```
#[derive(Clone)]
pub struct Keys {
    current: Key,
    older: Vec<Key>,
}

impl fmt::Debug for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keys")
            .field("current", &self.current.id)
            .field("older", &self.older.iter().map(|k| k.id).collect::<Vec<_>>())
            .finish()
    }
}

impl Keys {
    /// Keys with `key` (32 bytes) as the current one.
    ///
    /// # Errors
    /// [`KeyError::Length`] unless `key` is 32 bytes long.
    pub fn new(key: &[u8]) -> Result<Self, KeyError> {
        Ok(Self { current: Key::new(key)?, older: Vec::new() })
    }

    /// Keys with the current one given as base64 of 32 bytes (as `GRAPHWRIGHT_AES_KEY` holds
    /// it; `openssl rand -base64 32` makes one).
    ///
    /// # Errors
    /// [`KeyError::NotBase64`] or [`KeyError::Length`].
    pub fn from_base64(key: &str) -> Result<Self, KeyError> {
        Ok(Self { current: Key::from_base64(key)?, older: Vec::new() })
    }

    /// Adds an older key (32 bytes), used only to read what it encrypted.
    ///
    /// # Errors
    /// [`KeyError::Length`] unless `key` is 32 bytes long.
    pub fn with_old(mut self, key: &[u8]) -> Result<Self, KeyError> {
        self.older.push(Key::new(key)?);
        Ok(self)
    }

    /// Adds an older key given as base64, used only to read what it encrypted.
    ///
    /// # Errors
    /// [`KeyError::NotBase64`] or [`KeyError::Length`].
    pub fn with_old_base64(mut self, key: &str) -> Result<Self, KeyError> {
        self.older.push(Key::from_base64(key)?);
        Ok(self)
    }

    /// The id of the current key, the one new records are encrypted with.
    pub fn id(&self) -> KeyId {
        self.current.id
    }

    fn find(&self, id: KeyId) -> Option<&Key> {
        std::iter::once(&self.current).chain(&self.older).find(|k| k.id == id)
    }

    /// Encrypts `plain` with the current key, bound to `context`: it decrypts only with the same
    /// `context` (say, the id of the row it is stored in), so a ciphertext moved elsewhere is
    /// refused. Each call draws a fresh random nonce.
    ///
    /// # Errors
    /// [`EncryptionError`] when the system's random source fails, or `plain` is beyond AES-GCM's
    /// limit (64 GiB).
    ///
    /// ```
    /// use graphwright::encryption::Keys;
    ///
    /// let keys = Keys::new(&[7; 32])?;
    /// let sealed = keys.encrypt(b"a thread's values", b"thread 42")?;
    /// assert_eq!(keys.decrypt(&sealed, b"thread 42")?, b"a thread's values");
    /// assert!(keys.decrypt(&sealed, b"thread 43").is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn encrypt(&self, plain: &[u8], context: &[u8]) -> Result<Vec<u8>, EncryptionError> {
        self.seal(plain, context).map_err(|reason| EncryptionError { reason })
    }

    /// Decrypts what [`encrypt`](Self::encrypt) made with `context`, with whichever of these
    /// keys encrypted it.
    ///
    /// # Errors
    /// [`EncryptionError`] naming the key the ciphertext needs when it is not among these keys,
    /// or saying that it does not decrypt (a wrong key, a changed byte, another context).
    pub fn decrypt(&self, sealed: &[u8], context: &[u8]) -> Result<Vec<u8>, EncryptionError> {
        self.open(sealed, context).map_err(|reason| EncryptionError { reason })
    }

    pub(crate) fn seal(&self, plain: &[u8], aad: &[u8]) -> Result<Vec<u8>, String> {
        let nonce = Nonce::try_generate().map_err(|e| format!("no random nonce could be drawn: {e}"))?;
        let sealed = self
            .current
            .cipher
            .encrypt(&nonce, Payload { msg: plain, aad })
            .map_err(|_| "the record is too large to encrypt".to_owned())?;
        let mut body = Vec::with_capacity(HEADER_LEN + sealed.len());
        body.push(LAYOUT);
        body.extend_from_slice(&self.current.id.0);
        body.extend_from_slice(&nonce);
        body.extend_from_slice(&sealed);
        Ok(body)
    }

    pub(crate) fn open(&self, body: &[u8], aad: &[u8]) -> Result<Vec<u8>, String> {
        if body.len() < HEADER_LEN || body[0] != LAYOUT {
            return Err("the encrypted body is truncated or of an unknown layout".to_owned());
        }
        let mut id = [0; ID_LEN];
        id.copy_from_slice(&body[1..=ID_LEN]);
        let id = KeyId(id);
        let key = self.find(id).ok_or_else(|| {
            format!(
                "it was encrypted with key {id}, which is not among these keys (current {}): add it \
                 with `Keys::with_old`",
                self.current.id
            )
        })?;
        let nonce = Nonce::try_from(&body[1 + ID_LEN..HEADER_LEN]).map_err(|_| "the nonce is damaged".to_owned())?;
        key.cipher.decrypt(&nonce, Payload { msg: &body[HEADER_LEN..], aad }).map_err(|_| {
            format!(
                "it does not decrypt with key {id}: the key is wrong, or the record was altered or moved from \
                 another row"
            )
        })
    }
}

/// How the reasons a record cannot be read for want of its key begin ([`Keys`]' own, and a
/// checkpointer without keys meeting an encrypted record): the errors that carry them do not
/// then suspect damage or an incompatible version.
const KEY_REASONS: &[&str] = &["it was encrypted with key", "it does not decrypt with key", "the record is encrypted:"];

/// What a corrupt-record error adds after its reason: damage or an incompatible version is
/// suspected only when the reason is not about keys.
pub(crate) fn unread_because(reason: &str) -> &'static str {
    if KEY_REASONS.iter().any(|start| reason.starts_with(start)) {
        "it was not used"
    } else {
        "the stored data is damaged or was written by an incompatible version, and was not used"
    }
}

/// A checkpointer or a store that encrypts what it keeps, with AES-256-GCM (the
/// `aes-gcm` crate) under a fresh random nonce, each ciphertext bound to its row:
///
/// - as a [`Checkpointer`](crate::Checkpointer), each checkpoint's body and each task write's
///   body (the state, the next tasks, the interrupts, every task's output); the columns a
///   backend searches by (thread, id, parent, step, source, time) stay readable;
/// - as a [`Store`](crate::store::Store), each item's value; namespaces, keys and times stay
///   readable, and a search's filter is applied to the decrypted values.
///
/// Ids and namespaces are not encrypted: choose opaque ones (a random thread id rather than a
/// user's e-mail address) when they would say too much.
///
/// Reading is authenticated: a wrong key, a changed byte, or a record moved to another row or
/// thread is an error naming the record and the key it needs
/// ([`CheckpointError::Corrupt`](crate::checkpoint::CheckpointError::Corrupt),
/// [`StoreError::Corrupt`](crate::store::StoreError::Corrupt)), never a different value.
/// Records stored before encryption was turned on are read as they are, and older keys listed
/// with [`Keys::with_old`] still read what they wrote, so keys can be rotated without rewriting
/// anything. Made with `.encrypted(keys)` on a saver or store
/// ([`SqliteSaver::encrypted`](crate::SqliteSaver::encrypted)) or with [`Encrypted::new`].
///
/// ```
/// use graphwright::MemorySaver;
/// use graphwright::encryption::{Encrypted, Keys};
///
/// let keys = Keys::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")?;
/// let saver = Encrypted::new(MemorySaver::new(), keys);
/// # let _ = saver;
/// # Ok::<(), graphwright::encryption::KeyError>(())
/// ```
pub struct Encrypted<C> {
    inner: C,
    keys: Arc<Keys>,
}

impl<C> fmt::Debug for Encrypted<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Encrypted").field("keys", &self.keys).finish_non_exhaustive()
    }
}

impl<C> Encrypted<C> {
    /// `inner`, with what it keeps encrypted under `keys`.
    pub fn new(inner: C, keys: Keys) -> Self {
        Self { inner, keys: Arc::new(keys) }
    }

    /// The checkpointer or store underneath, which keeps (and returns) the encrypted records.
    pub fn inner(&self) -> &C {
        &self.inner
    }
}

#[cfg(test)]
mod tests {
    use super::{KeyError, Keys};

    #[test]
    fn a_sealed_body_opens_only_with_its_key_and_its_row() {
        let keys = Keys::new(&[1; 32]).unwrap();
        let aad = b"row 1";
        let sealed = keys.seal(b"the state", aad).unwrap();
        assert!(!sealed.windows(9).any(|w| w == b"the state"));
        assert_eq!(keys.open(&sealed, aad).unwrap(), b"the state");

        let elsewhere = b"row 2";
        assert!(keys.open(&sealed, elsewhere).unwrap_err().contains("moved from another row"));
        let other = Keys::new(&[2; 32]).unwrap();
        let unknown = other.open(&sealed, aad).unwrap_err();
        assert!(unknown.contains(&keys.id().to_string()) && unknown.contains("Keys::with_old"), "{unknown}");
        let rotated = Keys::new(&[2; 32]).unwrap().with_old(&[1; 32]).unwrap();
        assert_eq!(rotated.open(&sealed, aad).unwrap(), b"the state");

        let mut flipped = sealed.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(keys.open(&flipped, aad).is_err());
        assert!(keys.open(&sealed[..10], aad).unwrap_err().contains("truncated"));
    }

    #[test]
    fn two_sealings_of_one_body_differ() {
        let keys = Keys::new(&[1; 32]).unwrap();
        assert_ne!(keys.seal(b"x", b"").unwrap(), keys.seal(b"x", b"").unwrap());
    }

    #[test]
    fn keys_are_checked_and_never_printed() {
        assert!(matches!(Keys::new(&[0; 16]), Err(KeyError::Length(16))));
        assert!(matches!(Keys::from_base64("not base64!"), Err(KeyError::NotBase64(_))));
        let keys = Keys::from_base64("AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=").unwrap();
        assert_eq!(keys.id(), Keys::new(&[1; 32]).unwrap().id());
        let shown = format!("{keys:?}");
        assert!(shown.contains(&keys.id().to_string()) && !shown.contains("AQEB"), "{shown}");
    }
}
