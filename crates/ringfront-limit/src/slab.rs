//! How many states nginx's slab allocator fits in a shared zone (ngx_slab.c on 64-bit Linux,
//! 4 KiB pages): a zone's memory is a header, one page descriptor per page, then pages; a
//! state takes a chunk of the next power of two from 8 bytes (a whole run of pages past
//! 2 KiB). The zone's bookkeeping (the tree's root and sentinel, the log context) takes two
//! pages' worth. nginx's documentation: a 1m zone keeps about 16 thousand 64-byte states
//! or 8 thousand 128-byte ones.

pub const PAGE: u64 = 4096;
/// `ngx_slab_pool_t` with its slot and statistics arrays (9 chunk sizes, 8 to 2048).
const POOL_HEADER: u64 = 704;
/// `ngx_slab_page_t`.
const PAGE_DESCRIPTOR: u64 = 24;
/// `offsetof(ngx_rbtree_node_t, color)`: every node starts with the tree's links.
const TREE_NODE: u64 = 32;
/// `offsetof(ngx_http_limit_req_node_t, data)`.
const REQ_NODE: u64 = 48;
/// `offsetof(ngx_http_limit_conn_node_t, data)`.
const CONN_NODE: u64 = 4;

/// The pages of a zone of `size` bytes that states can use.
pub fn pages(size: u64) -> u64 {
    let room = size.saturating_sub(POOL_HEADER);
    let n = room / (PAGE + PAGE_DESCRIPTOR);
    let start = (POOL_HEADER + n * PAGE_DESCRIPTOR).div_ceil(PAGE) * PAGE;
    let fit = size.saturating_sub(start) / PAGE;
    n.min(fit).saturating_sub(2)
}

/// What the slab takes for an allocation of `bytes`: a power-of-two chunk from 8 bytes up
/// to 2 KiB, whole pages past that.
pub fn chunk(bytes: u64) -> u64 {
    if bytes > PAGE / 2 {
        return bytes.div_ceil(PAGE) * PAGE;
    }
    bytes.max(8).next_power_of_two()
}

/// The bytes one `limit_req` state with a key of `key_len` bytes takes.
pub fn req_cost(key_len: usize) -> u64 {
    chunk(TREE_NODE + REQ_NODE + key_len as u64)
}

/// The bytes one `limit_conn` state with a key of `key_len` bytes takes.
pub fn conn_cost(key_len: usize) -> u64 {
    chunk(TREE_NODE + CONN_NODE + key_len as u64)
}

/// The bytes of a zone of `size` that states may take.
pub fn budget(size: u64) -> u64 {
    pages(size) * PAGE
}

/// How many states of `cost` bytes each a zone of `size` keeps.
pub fn states(size: u64, cost: u64) -> u64 {
    if cost <= PAGE {
        return pages(size) * (PAGE / cost);
    }
    pages(size) / (cost / PAGE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nginx_documented_capacities() {
        let m = 1 << 20;
        // $binary_remote_addr (4 bytes): 64-byte limit_conn states, 128-byte limit_req ones.
        assert_eq!(conn_cost(4), 64);
        assert_eq!(req_cost(4), 128);
        assert_eq!(req_cost(16), 128);
        let conn = states(m, conn_cost(4));
        let req = states(m, req_cost(4));
        assert!((16_000..16_384).contains(&conn), "{conn}");
        assert!((8_000..8_192).contains(&req), "{req}");
        assert_eq!(req * 2, conn);
        // A long key: 80 + 100 bytes is a 256-byte chunk.
        assert_eq!(req_cost(100), 256);
        assert_eq!(states(m, req_cost(100)), req / 2);
    }

    #[test]
    fn small_zones_and_big_keys() {
        // nginx's smallest zone, 8 pages: 7 after the header, 5 for states.
        assert_eq!(pages(8 * PAGE), 5);
        assert_eq!(chunk(3000), PAGE);
        assert_eq!(chunk(5000), 2 * PAGE);
        assert_eq!(req_cost(65535), 17 * PAGE);
        assert_eq!(states(8 * PAGE, 2 * PAGE), 2);
        assert_eq!(chunk(1), 8);
    }
}
