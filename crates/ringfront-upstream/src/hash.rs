//! `ip_hash` (`ngx_http_upstream_get_ip_hash_peer`) and `hash KEY`
//! (`ngx_http_upstream_get_hash_peer`): a hash of the client address or of the key, taken
//! modulo the total weight and walked over the weights; an unusable or tried peer makes the
//! hash advance, and after 20 such steps round robin takes over for the rest of the request.

use crate::attempt::Attempt;
use crate::board::Board;
use crate::check::{touch, usable};
use crate::crc32;
use crate::rr;
use crate::select::RequestKey;
use crate::topology::{PeerId, Upstream};
use crate::worker::WorkerPeers;

/// nginx re-hashes at most 20 times before falling back to round robin.
const MAX_REHASH: u32 = 20;

/// Take the peer at `p` of the primaries if it is untried and usable.
fn try_take(up: &Upstream, board: &Board, at: &mut Attempt, p: usize, now: u64) -> bool {
    let list = &up.primary;
    let id = list.base + p;
    let (Some(spec), Some(h)) = (list.peers.get(p), board.get(id)) else {
        return false;
    };
    if at.tried.contains(p) || !usable(spec, h, now) {
        return false;
    }
    touch(spec, h, now);
    at.tried.insert(p);
    true
}

/// The bytes `ip_hash` mixes: the first three octets of an IPv4 address, all sixteen of an
/// IPv6 one, and for anything else (a unix-socket client) nginx's pseudo address, three
/// zero bytes.
fn ip_bytes(key: &RequestKey) -> ([u8; 16], usize) {
    let mut b = [0u8; 16];
    match key.client {
        Some(std::net::IpAddr::V4(v4)) => {
            b[..4].copy_from_slice(&v4.octets());
            (b, 3)
        }
        Some(std::net::IpAddr::V6(v6)) => (v6.octets(), 16),
        None => (b, 3),
    }
}

pub(crate) fn ip_hash(
    up: &Upstream,
    ws: &mut WorkerPeers,
    board: &Board,
    at: &mut Attempt,
    key: &RequestKey,
    now: u64,
) -> Option<PeerId> {
    let total = up.primary.total_weight;
    if at.bal.tries > MAX_REHASH || up.single || total == 0 {
        return rr::pick(up, ws, board, at, now);
    }
    let (bytes, len) = ip_bytes(key);
    let mut hash = at.bal.hash;
    loop {
        for &b in &bytes[..len] {
            hash = hash.wrapping_mul(113).wrapping_add(u64::from(b)) % 6271;
        }
        let p = up.primary.walk(hash % total);
        if try_take(up, board, at, p, now) {
            at.bal.hash = hash;
            return Some(up.primary.base + p);
        }
        at.bal.tries += 1;
        if at.bal.tries > MAX_REHASH {
            return rr::pick(up, ws, board, at, now);
        }
    }
}

/// `rehash` as nginx's `%ui` prints it, into `buf`; returns the digits.
fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 || at == 0 {
            break;
        }
    }
    &buf[at..]
}

/// One step of `hash KEY`, compatible with Cache::Memcached:
/// `hash += (crc32([REHASH] KEY) >> 16) & 0x7fff`, REHASH (decimal) omitted the first time.
fn step(key: &[u8], rehash: u64, hash: u32) -> u32 {
    let mut crc = crc32::INIT;
    if rehash > 0 {
        let mut buf = [0u8; 20];
        crc = crc32::update(crc, decimal(rehash, &mut buf));
    }
    crc = crc32::finish(crc32::update(crc, key));
    hash.wrapping_add((crc >> 16) & 0x7fff)
}

pub(crate) fn hash(
    up: &Upstream,
    ws: &mut WorkerPeers,
    board: &Board,
    at: &mut Attempt,
    key: &RequestKey,
    now: u64,
) -> Option<PeerId> {
    let total = up.primary.total_weight;
    if at.bal.tries > MAX_REHASH || up.single || key.hash.is_empty() || total == 0 {
        return rr::pick(up, ws, board, at, now);
    }
    loop {
        let h = step(key.hash, at.bal.rehash, at.bal.hash as u32);
        at.bal.hash = u64::from(h);
        at.bal.rehash += 1;
        let p = up.primary.walk(u64::from(h) % total);
        if try_take(up, board, at, p, now) {
            return Some(up.primary.base + p);
        }
        at.bal.tries += 1;
        if at.bal.tries > MAX_REHASH {
            return rr::pick(up, ws, board, at, now);
        }
    }
}

#[cfg(test)]
mod tests;
