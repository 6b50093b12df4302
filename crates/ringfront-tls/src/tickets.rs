//! Session tickets. One ticketer per server configuration, shared by every worker (the
//! configuration is one `Arc`), so a ticket issued on one core resumes on any other.
//! Without `ssl_session_ticket_key` the keys are random and rotated every
//! `ssl_session_timeout`, the previous one still decrypting (nginx 1.23.2's rotation; a
//! ticket is never good for longer than the timeout anyway, session_expiry.rs); with it, the
//! files' keys are used as nginx uses them: the first encrypts, every one decrypts, so keys
//! can be rotated across a fleet by listing the new file first and the old one after.

use std::sync::Arc;

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use aws_lc_rs::hkdf::{Salt, HKDF_SHA256};
use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use ringfront_config::SslFile;
use rustls::server::ProducesTickets;

use crate::error::TlsError;

const NAME_LEN: usize = 16;

/// Tickets from the configured key files.
#[derive(Debug)]
struct KeyFiles {
    keys: Vec<([u8; NAME_LEN], LessSafeKey)>,
    lifetime: u32,
    rng: SystemRandom,
}

/// A key file: 48 bytes (nginx's AES-128 form) or 80 (AES-256); the first 16 name the key.
fn load(f: &SslFile) -> Result<([u8; NAME_LEN], LessSafeKey), TlsError> {
    let bytes = std::fs::read(&f.path).map_err(|e| {
        TlsError::at(
            f,
            format!(
                "open() \"{}\" failed ({})",
                f.path.display(),
                crate::error_text(&e)
            ),
        )
    })?;
    if bytes.len() != 48 && bytes.len() != 80 {
        return Err(TlsError::at(
            f,
            format!("\"{}\" must be 48 or 80 bytes", f.path.display()),
        ));
    }
    let mut name = [0u8; NAME_LEN];
    name.copy_from_slice(&bytes[..NAME_LEN]);
    let prk = Salt::new(HKDF_SHA256, b"ringfront session ticket").extract(&bytes[NAME_LEN..]);
    let mut key = [0u8; 32];
    prk.expand(&[b"aes-256-gcm"], &AES_256_GCM)
        .and_then(|okm| okm.fill(&mut key))
        .map_err(|_| TlsError::at(f, "cannot derive a ticket key".into()))?;
    let unbound = UnboundKey::new(&AES_256_GCM, &key)
        .map_err(|_| TlsError::at(f, "cannot derive a ticket key".into()))?;
    Ok((name, LessSafeKey::new(unbound)))
}

impl ProducesTickets for KeyFiles {
    fn enabled(&self) -> bool {
        true
    }

    fn lifetime(&self) -> u32 {
        self.lifetime
    }

    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        let (name, key) = self.keys.first()?;
        let mut nonce = [0u8; NONCE_LEN];
        self.rng.fill(&mut nonce).ok()?;
        let mut out = Vec::with_capacity(NAME_LEN + NONCE_LEN + plain.len() + 16);
        out.extend_from_slice(name);
        out.extend_from_slice(&nonce);
        let mut body = plain.to_vec();
        key.seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(name),
            &mut body,
        )
        .ok()?;
        out.extend_from_slice(&body);
        Some(out)
    }

    fn decrypt(&self, ticket: &[u8]) -> Option<Vec<u8>> {
        let name = ticket.get(..NAME_LEN)?;
        let nonce = ticket.get(NAME_LEN..NAME_LEN + NONCE_LEN)?;
        let (n, key) = self.keys.iter().find(|(n, _)| n == name)?;
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut body = ticket.get(NAME_LEN + NONCE_LEN..)?.to_vec();
        let plain = key.open_in_place(nonce, Aad::from(n), &mut body).ok()?;
        Some(plain.to_vec())
    }
}

/// A random key (and name), for [`rustls::TicketRotator`].
fn random_keys() -> Result<Box<dyn ProducesTickets>, rustls::crypto::GetRandomFailed> {
    let rng = SystemRandom::new();
    let mut name = [0u8; NAME_LEN];
    let mut key = [0u8; 32];
    rng.fill(&mut name)
        .and_then(|()| rng.fill(&mut key))
        .map_err(|_| rustls::crypto::GetRandomFailed)?;
    let unbound =
        UnboundKey::new(&AES_256_GCM, &key).map_err(|_| rustls::crypto::GetRandomFailed)?;
    Ok(Box::new(KeyFiles {
        keys: vec![(name, LessSafeKey::new(unbound))],
        lifetime: 0,
        rng,
    }))
}

/// The rotating ticketer, announcing `ssl_session_timeout` as the ticket lifetime.
#[derive(Debug)]
struct Lifetime(Arc<dyn ProducesTickets>, u32);

impl ProducesTickets for Lifetime {
    fn enabled(&self) -> bool {
        self.0.enabled()
    }
    fn lifetime(&self) -> u32 {
        self.1
    }
    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        self.0.encrypt(plain)
    }
    fn decrypt(&self, cipher: &[u8]) -> Option<Vec<u8>> {
        self.0.decrypt(cipher)
    }
}

/// The ticketer for `ssl_session_ticket_key` files, or random rotating keys without any.
pub fn ticketer(files: &[SslFile], lifetime: u32) -> Result<Arc<dyn ProducesTickets>, TlsError> {
    if files.is_empty() {
        let inner = rustls::TicketRotator::new(lifetime.max(1), random_keys)
            .map_err(|e| TlsError(format!("cannot make session ticket keys: {e}")))?;
        return Ok(Arc::new(Lifetime(Arc::new(inner), lifetime)));
    }
    let keys = files.iter().map(load).collect::<Result<_, _>>()?;
    Ok(Arc::new(KeyFiles {
        keys,
        lifetime,
        rng: SystemRandom::new(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &std::path::Path, name: &str, fill: u8, len: usize) -> SslFile {
        let path = dir.join(name);
        std::fs::write(&path, vec![fill; len]).unwrap();
        SslFile {
            path,
            origin: Default::default(),
        }
    }

    #[test]
    fn the_first_key_encrypts_and_every_key_decrypts() {
        let dir = std::env::temp_dir().join(format!("rf-tickets-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let old = file(&dir, "old.key", 1, 80);
        let new = file(&dir, "new.key", 2, 48);
        let t_old = ticketer(std::slice::from_ref(&old), 300).unwrap();
        let t_both = ticketer(&[new.clone(), old.clone()], 300).unwrap();
        let t_new = ticketer(std::slice::from_ref(&new), 300).unwrap();
        let ticket = t_old.encrypt(b"session").unwrap();
        assert_eq!(t_both.decrypt(&ticket).unwrap(), b"session");
        assert!(t_new.decrypt(&ticket).is_none());
        let fresh = t_both.encrypt(b"s2").unwrap();
        assert_eq!(t_new.decrypt(&fresh).unwrap(), b"s2");
        let mut forged = fresh.clone();
        *forged.last_mut().unwrap() ^= 1;
        assert!(t_new.decrypt(&forged).is_none());
        assert_eq!(t_new.lifetime(), 300);
        let bad = file(&dir, "bad.key", 3, 47);
        let e = ticketer(&[bad], 300).unwrap_err().to_string();
        assert!(e.ends_with("must be 48 or 80 bytes"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
